package main

// The command tree, on github.com/spf13/cobra: the library of kubectl, docker and etcdctl, so its
// help layout, "did you mean" suggestions, flags after arguments and shell completion are what users
// of Go tools already know, and each command's help is generated from its flag definitions.
//
// Every command keeps two parts apart: a function that defines its flags into an options struct
// (reproFlags, exploreFlags, ...) and the command's logic, which gets the parsed options and returns
// the exit status.

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the whole CLI: it parses args, runs the command and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int { return runIO(args, os.Stdin, stdout, stderr) }

// runIO is run with logcheck's standard input given (tests give their own).
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	code := exitOK
	e := &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr, code: &code, places: cleanupPlaces}
	return execute(rootCmd(e), args, e)
}

// execute runs the command tree on args and returns the exit status.
func execute(root *cobra.Command, args []string, e *cliEnv) int {
	root.SetArgs(singleDash(root, args))
	stderr := e.stderr
	cmd, err := root.ExecuteC()
	if err != nil {
		// cobra's own errors are all bad input: an unknown command or flag, a bad value, an argument
		// too many
		msg := strings.TrimRight(err.Error(), "\n")
		if strings.Contains(msg, "\n") { // an unknown command, and the near ones
			fmt.Fprintf(stderr, "%s: %s\nSee '%s --help'.\n", cmd.CommandPath(), msg, cmd.CommandPath())
		} else {
			fmt.Fprintf(stderr, "%s: %s (see %s --help)\n", cmd.CommandPath(), msg, cmd.CommandPath())
		}
		return exitBadInput
	}
	return *e.code
}

// cliEnv is what every command's run needs: the streams and where to put its exit status.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	code           *int
	places         placesFunc // where cleanup looks (tests give fakes)
}

// exitStatus is the root help's footer, the one place the exit statuses are documented.
const exitStatus = `
Exit status (every command):
  0    nothing found and every expectation met (repro --expectations: every scenario that has
       expectations met them, whatever they name)
  1    a violation: an invariant broken or a history no sequential order explains
  2    bad input (unknown command or flag, bad value, extra argument, unreadable file), or a run
       that could not be done
  3    undecided: the linearizability checker timed out on some object and nothing else was found
       (logcheck: nothing in the logs was decidable)
  4    an outcome that differs from the scenario's expectations
  5    a simulated run stopped at --max-steps or --max-sim-time before it finished (no verdict)
  130  interrupted (Ctrl-C or SIGTERM)
Of several, the first that applies: 130, 2 and 5 end the run when they happen; then 4 (an
unexpected violation in a scenario with expectations is a 4), 1, 3, 0.
`

func rootCmd(e *cliEnv) *cobra.Command {
	root := &cobra.Command{
		Use:   "csconform",
		Short: "find orchestration races in CloudStack-style management servers",
		Long: `csconform finds orchestration races in CloudStack-style management servers: it reproduces them
in a deterministic simulator (or on libvirt, in containers, against a real CloudStack) and checks the
safety invariants and linearizability on every step.`,
		Example: `  csconform scenarios
  csconform repro all --profile fixed
  csconform explore --budget 1000 --out reports
  csconform check reports/history.jsonl --json
  csconform logcheck /var/log/cloudstack/management/`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// --version, as Go tools have it: the same line as csconform version
		Version: versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version line (as csconform version) and exit")
	// flag help wrapped at 100 columns, and the exit statuses under the root's help only
	tmpl := strings.ReplaceAll(root.UsageTemplate(), ".FlagUsages", ".FlagUsagesWrapped 100")
	root.SetUsageTemplate(tmpl + `{{if not .HasParent}}` + exitStatus + `{{end}}`)
	root.AddGroup(
		&cobra.Group{ID: "sim", Title: "The simulator:"},
		&cobra.Group{ID: "real", Title: "A real CloudStack:"},
		&cobra.Group{ID: "proc", Title: "Processes the drivers start:"},
	)
	cobra.EnableCommandSorting = false // the commands in the order below, the most used first
	for _, c := range []*cobra.Command{
		newScenariosCmd(e),
		newReproCmd(e),
		newExploreCmd(e),
		newCheckCmd(e),
		newBenchCmd(e),
		newProfilesCmd(e),
		newFaultsCmd(e),
		newConfigCmd(e),
		newMutantsCmd(e),
		newLogcheckCmd(e),
		newAuditCmd(e),
		newInjectCmd(e),
		newCleanupCmd(e),
		newServerCmd(e),
		newAgentCmd(e),
		newHypervisorCmd(e),
		newVersionCmd(e),
	} {
		c.Flags().SortFlags = false // in definition order: related flags stay together
		c.GroupID = groupOf[c.Name()]
		root.AddCommand(c)
	}
	root.SetIn(e.stdin) // before the completion command takes its output stream
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	// cobra's help command, which would answer an unknown topic with the root's usage and exit 0
	root.InitDefaultHelpCmd()
	if h, _, err := root.Find([]string{"help"}); err == nil && h != root {
		help := h.Run
		h.Run = nil
		h.RunE = func(c *cobra.Command, args []string) error {
			if _, _, err := c.Root().Find(args); err != nil {
				return err
			}
			help(c, args)
			return nil
		}
	}
	// cobra's completion command, which alone would answer an unknown shell with its help and exit 0
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.RunE = func(c *cobra.Command, _ []string) error { return c.Help() } // runnable: its NoArgs refuses the shell
	}
	return root
}

// groupOf is each command's group in the root's help; the others (version, help, completion) come
// last.
var groupOf = map[string]string{
	"scenarios": "sim", "repro": "sim", "explore": "sim", "check": "sim", "bench": "sim",
	"profiles": "sim", "faults": "sim", "config": "sim", "mutants": "sim",
	"logcheck": "real", "audit": "real", "inject": "real", "cleanup": "real",
	"server": "proc", "agent": "proc", "hypervisor": "proc",
}

// noArgs refuses positional arguments, in the words of the commands that check their own.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// exactArgs wants n positional arguments; why says which.
func exactArgs(n int, why string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("unexpected argument %q", args[n])
		}
		if len(args) < n {
			return fmt.Errorf("%s", why)
		}
		return nil
	}
}
