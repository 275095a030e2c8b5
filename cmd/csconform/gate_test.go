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

// judge's precedence, one scenario at a time: an unmet expectation (4) wins over a finding (1), a
// finding over an undecided object (3); with the gate, a scenario that met its expectations passes
// whatever its profile is known to break.
func TestJudgePrecedence(t *testing.T) {
	viol := []harness.Violation{{}}
	viol[0].Invariant = "orphan-domain"
	und := []linear.Result{{Object: "vm:2"}}
	cases := []struct {
		name   string
		r      harness.Result
		gate   bool
		status string
		code   int
	}{
		{"clean", harness.Result{}, false, "clean", exitOK},
		{"found", harness.Result{Violations: viol}, false, "FOUND", exitFound},
		{"undecided", harness.Result{Undecided: und}, false, "UNDECIDED", exitUndecided},
		{"found beats undecided", harness.Result{Violations: viol, Undecided: und}, false, "FOUND", exitFound},
		{"unmet beats found", harness.Result{Expected: true, Mismatches: []string{"x"}, Violations: viol}, false, "UNMET", exitExpectation},
		{"met but found, no gate", harness.Result{Expected: true, Violations: viol}, false, "FOUND", exitFound},
		{"met and found, gate", harness.Result{Expected: true, Violations: viol, NotLinearizable: und}, true, "met", exitOK},
		{"unmet under the gate", harness.Result{Expected: true, Mismatches: []string{"x"}}, true, "UNMET", exitExpectation},
		{"no expectations under the gate", harness.Result{Violations: viol}, true, "FOUND", exitFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judge(&c.r, c.gate)
			assert.Equal(t, c.status, v.status)
			assert.Equal(t, c.code, v.code)
			assert.Equal(t, c.code, reproStatus([]*harness.Result{&c.r}, c.gate))
		})
	}
	// the worst verdict of several is the run's
	assert.Equal(t, exitExpectation, reproStatus([]*harness.Result{{Violations: viol}, {Expected: true, Mismatches: []string{"x"}}, {Undecided: und}}, false))
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
