package explore

import (
	"strings"
	"testing"
)

// TestUndecidedCasesAreNotLinearizable: an exploration whose checker timed out on some case says so,
// and never that every object's history is linearizable.
func TestUndecidedCasesAreNotLinearizable(t *testing.T) {
	s := &Summary{Profile: "fixed", Cases: 10, Undecided: 2}
	text := s.Text()
	if strings.Contains(text, "every object's history linearizable") || !strings.Contains(text, "2 case(s) UNDECIDED") {
		t.Fatalf("summary:\n%s", text)
	}
	if j := string(s.JUnit()); !strings.Contains(j, `<skipped message="undecided in 2 case(s)`) {
		t.Fatalf("junit:\n%s", j)
	}
}
