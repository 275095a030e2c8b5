package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/model/linear"
)

// repro's exit status is the worst outcome's (verdict.Worst: its precedence is tested there).
func TestReproStatus(t *testing.T) {
	viol := []harness.Violation{{}}
	viol[0].Invariant = "orphan-domain"
	und := []linear.Result{{Object: "vm:2"}}
	for _, c := range []struct {
		rs   []*harness.Result
		gate bool
		code int
	}{
		{[]*harness.Result{{}}, false, exitOK},
		{[]*harness.Result{{Undecided: und}}, false, exitUndecided},
		{[]*harness.Result{{Violations: viol}}, false, exitFound},
		{[]*harness.Result{{Expected: true, Violations: viol}}, true, exitOK},
		{[]*harness.Result{{Violations: viol}, {Expected: true, Mismatches: []string{"x"}}, {Undecided: und}}, false, exitExpectation},
	} {
		assert.Equal(t, c.code, reproStatus(c.rs, c.gate))
	}
}

// CI can gate on the buggy profile: --expectations exits 0 when every scenario met its
// expectations, its known violations included, and 4 when one did not; --summary is one line a
// scenario.
func TestReproExpectationsGate(t *testing.T) {
	wrong := filepath.Join(t.TempDir(), "wrong.yaml")
	y := `name: wrong-expectations
hosts: [h1]
networks: [{name: net1}]
steps:
  - {op: deploy, vm: web1, networks: [net1], host: h1}
expect:
  fixed: {violations: [orphan-domain]}
`
	if err := os.WriteFile(wrong, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLICases(t, []cliCase{
		{[]string{"repro", "seed-004-forced-destroy", "--profile", "cloudstack-4.22"}, exitFound, "orphan-domain"},
		{[]string{"repro", "seed-004-forced-destroy", "--profile", "cloudstack-4.22", "--expectations"}, exitOK, "outcome as expected"},
		{[]string{"repro", "seed-004-forced-destroy", "--profile", "cloudstack-4.22", "--expectations", "--summary"}, exitOK, "met       seed-004-forced-destroy  as expected: "},
		{[]string{"repro", wrong, "--profile", "fixed", "--expectations", "--summary"}, exitExpectation, "UNMET     wrong-expectations"},
		{[]string{"repro", "seed-004-forced-destroy", "--defects", "D3", "--expectations"}, exitBadInput, "--defects checks none"},
		{[]string{"repro", "seed-004-forced-destroy", "--summary", "--json"}, exitBadInput, "not both"},
	})
}

// repro all --summary is a line a scenario and a tally, not ~2,000 lines, when everything is as
// expected.
func TestReproAllSummaryIsShort(t *testing.T) {
	var out, errb strings.Builder
	code := run([]string{"repro", "all", "--profile", "cloudstack-4.22", "--expectations", "--summary"}, &out, &errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Equal(t, exitOK, code, "%s%s", out.String(), errb.String())
	assert.Regexp(t, `^\d+ scenario\(s\): \d+ met$`, lines[len(lines)-1])
	assert.Less(t, len(lines), 60)
	assert.Empty(t, errb.String(), "no progress lines in summary mode")
}
