package job

import (
	"fmt"
	"testing"

	"github.com/csconform/csconform/model/internal/specdoc"
)

func TestDone(t *testing.T) {
	tests := []struct {
		s    Status
		done bool
	}{
		{InProgress, false},
		{Succeeded, true},
		{Failed, true},
		{Cancelled, true},
		{"", false},
	}
	for _, tc := range tests {
		if got := tc.s.Done(); got != tc.done {
			t.Errorf("%q.Done() = %v, want %v", tc.s, got, tc.done)
		}
	}
}

func TestMatchesSpec(t *testing.T) {
	tab, err := specdoc.SectionOrSkip(t, "2.4").TableWithHeader("Status", "done?")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range tab.Rows {
		s := Status(r[0])
		names = append(names, r[0])
		if want := r[1] == "yes"; s.Done() != want {
			t.Errorf("%s.Done() = %v, spec says %q", s, s.Done(), r[1])
		}
	}
	if got, want := fmt.Sprint(Statuses()), fmt.Sprint(names); got != want {
		t.Errorf("Statuses() = %s, spec lists %s", got, want)
	}
}
