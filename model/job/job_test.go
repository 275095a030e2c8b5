package job

import (
	"errors"
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
	d, err := specdoc.Load()
	if errors.Is(err, specdoc.ErrMissing) {
		t.Skipf("spec not available (%v): expected at <repo>/../shared/spec/cloudstack-behaviour.md, or set %s", err, specdoc.EnvVar)
	}
	if err != nil {
		t.Fatal(err)
	}
	sec, err := d.Section("2.4")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := sec.TableWithHeader("Status", "done?")
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
