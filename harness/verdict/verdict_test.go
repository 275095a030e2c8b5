package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/model/linear"
)

// Of's precedence, one scenario at a time: an unmet expectation wins over a finding, a finding over
// an undecided object; with the gate, a scenario that met its expectations passes whatever its
// profile is known to break.
func TestPrecedence(t *testing.T) {
	viol := []harness.Violation{{}}
	viol[0].Invariant = "orphan-domain"
	und := []linear.Result{{Object: "vm:2"}}
	cases := []struct {
		name    string
		r       harness.Result
		gate    bool
		status  string
		outcome Outcome
	}{
		{"clean", harness.Result{}, false, "clean", OK},
		{"found", harness.Result{Violations: viol}, false, "FOUND", Found},
		{"undecided", harness.Result{Undecided: und}, false, "UNDECIDED", Undecided},
		{"found beats undecided", harness.Result{Violations: viol, Undecided: und}, false, "FOUND", Found},
		{"unmet beats found", harness.Result{Expected: true, Mismatches: []string{"x"}, Violations: viol}, false, "UNMET", Unmet},
		{"met but found, no gate", harness.Result{Expected: true, Violations: viol}, false, "FOUND", Found},
		{"met and found, gate", harness.Result{Expected: true, Violations: viol, NotLinearizable: und}, true, "met", OK},
		{"unmet under the gate", harness.Result{Expected: true, Mismatches: []string{"x"}}, true, "UNMET", Unmet},
		{"no expectations under the gate", harness.Result{Violations: viol}, true, "FOUND", Found},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Of(&c.r, c.gate)
			assert.Equal(t, c.status, v.Status)
			assert.Equal(t, c.outcome, v.Outcome)
			assert.Equal(t, c.outcome, Worst([]*harness.Result{&c.r}, c.gate))
		})
	}
	// the worst verdict of several is the run's
	assert.Equal(t, Unmet, Worst([]*harness.Result{{Violations: viol}, {Expected: true, Mismatches: []string{"x"}}, {Undecided: und}}, false))
}

// The summary names an undecided object and never says every history is linearizable.
func TestUndecidedIsNeverLinearizable(t *testing.T) {
	r := &harness.Result{Scenario: "s", LinearChecked: true, Undecided: []linear.Result{{Object: "vm:1", Verdict: "unknown"}}}
	s := Summary([]*harness.Result{r})
	assert.NotContains(t, s, "every object's history linearizable")
	assert.Contains(t, s, "1 object(s) undecided")
	assert.Contains(t, s, "s: vm:1")
}
