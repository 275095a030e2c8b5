package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: [\n"), 0o644)
	cases := []cliCase{
		{[]string{"--help"}, 0, "Usage"},
		{[]string{"scenarios"}, 0, "seed-000-ab"},
		{[]string{"repro", "seed-004-forced-destroy", "--profile", "cloudstack-4.22"}, 1, "orphan-domain"},
		{[]string{"repro", "seed-004-forced-destroy", "--profile", "fixed"}, 0, "every object's history linearizable"},
		{[]string{"repro", "seed-004-forced-destroy", "--defects", "D3"}, 1, "ip-conflict"},
		{[]string{"repro", "nope"}, 2, "unknown scenario"},
		{[]string{"repro", bad}, 2, "bad.yaml"},
		{[]string{"repro", "all", "--profile", "cloudstack-9"}, 2, "unknown profile"},
		{[]string{"repro", "all", "--driver", "vmware"}, 2, "unknown driver"},
		{[]string{"repro", "all", "--defects", "D9"}, 2, "unknown defect"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	}
	runCLICases(t, cases)
}

func TestReproJSONIsDeterministic(t *testing.T) {
	var a, b, e bytes.Buffer
	run([]string{"repro", "all", "--json", "--seed", "42"}, &a, &e)
	run([]string{"repro", "all", "--json", "--seed", "42"}, &b, &e)
	if a.Len() == 0 || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two --json runs with the same seed differ")
	}
}

// cliCase is one command line, its exit status and something its output must mention.
type cliCase struct {
	args []string
	code int
	out  string
}

func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args, &out, &errb)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String()+errb.String(), c.out) {
				t.Fatalf("output does not mention %q:\n%s%s", c.out, out.String(), errb.String())
			}
		})
	}
}
