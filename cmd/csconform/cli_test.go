package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files: testdata/help/*.txt from the commands' help, testdata/report/*.txt from repro's reports")

// commandPaths are the arguments naming every command (cobra's help and completion included), each
// with its cobra command, from a tree as an execution leaves it.
func commandPaths(t *testing.T) map[string]*cobra.Command {
	t.Helper()
	code := 0
	e := &cliEnv{stdin: os.Stdin, stdout: io.Discard, stderr: io.Discard, code: &code, places: cleanupPlaces}
	root := rootCmd(e)
	require.Equal(t, 0, execute(root, []string{"--help"}, e))
	paths := map[string]*cobra.Command{}
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		paths[strings.Join(path, " ")] = c
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	return paths
}

// Every command's --help is generated from its flags, exits 0 on stdout, and is the golden file
// testdata/help/CMD.txt (go test -run TestHelpGolden -update rewrites them); -h and help CMD print
// the same.
func TestHelpGolden(t *testing.T) {
	paths := commandPaths(t)
	require.Greater(t, len(paths), 20)
	for path := range paths {
		name := strings.ReplaceAll(path, " ", "_")
		if name == "" {
			name = "csconform"
		}
		t.Run(name, func(t *testing.T) {
			args := append(strings.Fields(path), "--help")
			var out, errb bytes.Buffer
			require.Equal(t, exitOK, run(args, &out, &errb), errb.String())
			assert.Empty(t, errb.String())
			golden := filepath.Join("testdata", "help", name+".txt")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden file: go test ./cmd/csconform -run TestHelpGolden -update")
			assert.Equal(t, string(want), out.String())

			var short bytes.Buffer
			require.Equal(t, exitOK, run(append(strings.Fields(path), "-h"), &short, io.Discard))
			assert.Equal(t, out.String(), short.String(), "-h")
			if path != "" {
				var viaHelp bytes.Buffer
				require.Equal(t, exitOK, run(append([]string{"help"}, strings.Fields(path)...), &viaHelp, io.Discard))
				assert.Equal(t, out.String(), viaHelp.String(), "help %s", path)
			}
		})
	}
}

// Every flag says what it is for: the help is generated from the flags, so an empty one is a hole.
func TestEveryFlagHasHelp(t *testing.T) {
	n := 0
	for path, c := range commandPaths(t) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			n++
			assert.NotEmpty(t, strings.TrimSpace(f.Usage), "csconform %s --%s has no help", path, f.Name)
		})
	}
	assert.Greater(t, n, 100)
}

// The exit status of bad input, command by command: an unknown flag, a bad value, an extra argument
// and an unknown command are 2, said once on stderr with the command's name; --help is 0.
func TestCLIExitCodes(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	var out, errb bytes.Buffer
	require.Equal(t, exitFound, run([]string{"repro", "seed-004-forced-destroy", "--history", hist}, &out, &errb), errb.String())

	cases := []cliCase{
		{[]string{"frobnicate"}, exitBadInput, `csconform: unknown command "frobnicate"`},
		{[]string{"scenaros"}, exitBadInput, "Did you mean this?\n\tscenarios"},
		{[]string{"expore", "--seed", "1"}, exitBadInput, "Did you mean this?\n\texplore"},
		{[]string{"help", "inject"}, exitOK, "allow-host"},
		{[]string{"help", "injet"}, exitBadInput, "Did you mean this?\n\tinject"},
		{[]string{"check", hist, "--json"}, exitFound, `"partitions"`},
		{[]string{"check", "--json", hist}, exitFound, `"partitions"`},
		{[]string{"check", hist, "-json"}, exitFound, `"partitions"`}, // Go flag's single dash, as before
		{[]string{"check", hist, "--timeout", "soon"}, exitBadInput, `csconform check: invalid argument "soon" for "--timeout"`},
		{[]string{"check", hist, hist}, exitBadInput, "name one history file"},
		{[]string{"repro", "seed-004-forced-destroy", "extra"}, exitBadInput, "name one scenario"},
		{[]string{"repro", "seed-004-forced-destroy", "--seed", "-1"}, exitBadInput, `invalid argument "-1" for "--seed"`},
		{[]string{"explore", "--budget", "x"}, exitBadInput, `csconform explore: invalid argument "x" for "--budget"`},
		{[]string{"explore", "extra"}, exitBadInput, `unexpected argument "extra"`},
		{[]string{"bench", "extra"}, exitBadInput, `csconform bench: unexpected argument "extra"`},
		{[]string{"scenarios", "show"}, exitBadInput, "name one built-in scenario"},
		{[]string{"scenarios", "show", "a", "b"}, exitBadInput, `unexpected argument "b"`},
		{[]string{"version", "extra"}, exitBadInput, `unexpected argument "extra"`},
		{[]string{"mutants", "bogus"}, exitBadInput, `unexpected argument "bogus"`},
		{[]string{"mutants", "run", "--budget", "x"}, exitBadInput, `csconform mutants run: invalid argument "x"`},
		{[]string{"logcheck", "--stuck", "x"}, exitBadInput, `csconform logcheck: invalid argument "x" for "--stuck"`},
		{[]string{"cleanup", "extra"}, exitBadInput, `csconform cleanup: unexpected argument "extra"`},
		{[]string{"audit", "extra"}, exitBadInput, `csconform audit: unexpected argument "extra"`},
		{[]string{"audit", "--host", "h1"}, exitBadInput, "want NAME=URI"},
		{[]string{"inject", "crash", "extra"}, exitBadInput, `csconform inject: unexpected argument "extra"`},
		{[]string{"inject"}, exitOK, "Healing"},
		{[]string{"server", "--config", "nokey"}, exitBadInput, "csconform server: invalid argument"},
		{[]string{"agent", "extra"}, exitBadInput, `csconform agent: unexpected argument "extra"`},
		{[]string{"hypervisor", "extra"}, exitBadInput, `csconform hypervisor: unexpected argument "extra"`},
		{[]string{"completion", "bash"}, exitOK, "bash completion"},
		{[]string{"completion", "zsh"}, exitOK, "zsh completion"},
		{[]string{"completion", "fish"}, exitOK, "fish completion"},
		{[]string{"completion", "tcsh"}, exitBadInput, `csconform completion: unknown command "tcsh"`},
	}
	for _, c := range commandPaths(t) {
		if c.HasParent() && c.Name() != "help" {
			cases = append(cases, cliCase{append(strings.Fields(c.CommandPath())[1:], "--no-such-flag"), exitBadInput, "unknown flag: --no-such-flag"})
		}
	}
	runCLICases(t, cases)
}
