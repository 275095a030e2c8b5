package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csconform/csconform/harness"
)

// An outcome that differs from the scenario's expect fails the run with its own status (4), in the
// text (UNEXPECTED, in the summary too) and in the JSON (mismatches); before, it printed UNEXPECTED
// and exited 0 under fixed, 1 under cloudstack-4.22.
func TestUnmetExpectationFailsTheRun(t *testing.T) {
	f := filepath.Join(t.TempDir(), "wrong.yaml")
	// seed 004 expects orphan-domain under cloudstack-4.22; this copy expects a clean run there and
	// a violation under fixed: wrong under both
	y := `name: wrong-expectations
hosts: [h1]
config: {vm.destroy.forcestop: "true"}
networks: [{name: net1}]
steps:
  - {op: deploy, vm: web1, networks: [net1], host: h1}
  - {fault: agent-restart, host: h1, duration: 20s, async: true}
  - {wait: 2s, op: destroyExpunge, vm: web1, case: destroy}
expect:
  cloudstack-4.22: {violations: []}
  fixed: {violations: [orphan-domain]}
`
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLICases(t, []cliCase{
		{[]string{"repro", f, "--profile", "fixed"}, exitExpectation, "UNEXPECTED: 1 scenario(s) did not meet their expectations"},
		{[]string{"repro", f, "--profile", "cloudstack-4.22"}, exitExpectation, "UNEXPECTED"},
		// a custom set of switches has no expectations to meet
		{[]string{"repro", f, "--defects", "D3"}, 1, "orphan-domain"},
	})
	var out, errb bytes.Buffer
	if code := run([]string{"repro", f, "--profile", "fixed", "--json"}, &out, &errb); code != exitExpectation {
		t.Fatalf("--json: exit %d, want %d\n%s", code, exitExpectation, errb.String())
	}
	var doc struct {
		SchemaVersion int
		Results       []harness.Result
	}
	rs := &doc.Results
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.SchemaVersion != 1 || len(*rs) != 1 || !(*rs)[0].Expected || len((*rs)[0].Mismatches) == 0 {
		t.Fatalf("JSON does not carry the unmet expectation: %v\n%s", err, out.String())
	}
}

// csconform version says which build it is: the module version and Go's, and the revision when the
// binary was built from a checkout.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), "csconform ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("exit %d: %q %q", code, out.String(), errb.String())
	}
	// --version says the same, as Go tools' flag does
	var flag bytes.Buffer
	if code := run([]string{"--version"}, &flag, &errb); code != exitOK || flag.String() != out.String() {
		t.Fatalf("--version: exit %d: %q, want %q", code, flag.String(), out.String())
	}
}
