package network

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/csconform/csconform/model/internal/specdoc"
)

// wantTransitions is the spec 2.2 table transcribed by hand.
var wantTransitions = []struct{ from, event, to string }{
	{"Allocated", "ImplementNetwork", "Implementing"},
	{"Implementing", "OperationSucceeded", "Implemented"},
	{"Implementing", "OperationFailed", "Shutdown"},
	{"Implemented", "DestroyNetwork", "Shutdown"},
	{"Shutdown", "OperationSucceeded", "Allocated"},
	{"Shutdown", "OperationFailed", "Shutdown"},
	{"Setup", "DestroyNetwork", "Destroy"},
	{"Allocated", "DestroyNetwork", "Destroy"},
}

func TestTransitionsMatchLiteral(t *testing.T) {
	if len(Transitions) != len(wantTransitions) {
		t.Fatalf("len(Transitions) = %d, want %d", len(Transitions), len(wantTransitions))
	}
	for i, w := range wantTransitions {
		if want := (Transition{State(w.from), Event(w.event), State(w.to)}); Transitions[i] != want {
			t.Errorf("Transitions[%d] = %+v, want %+v", i, Transitions[i], want)
		}
	}
}

func TestTransitionsMatchSpec(t *testing.T) {
	tab, err := specdoc.SectionOrSkip(t, "2.2").TableWithHeader("From", "Event", "To")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		from State
		ev   Event
	}
	spec := map[key]State{}
	for _, r := range tab.Rows {
		if len(r) != 3 {
			t.Fatalf("malformed spec row %q", r)
		}
		k := key{State(r[0]), Event(r[1])}
		if _, dup := spec[k]; dup {
			t.Errorf("spec lists (%s, %s) twice", k.from, k.ev)
		}
		spec[k] = State(r[2])
	}
	if len(spec) == 0 {
		t.Fatal("no rows parsed from spec 2.2")
	}
	for _, tr := range Transitions {
		if to, ok := spec[key{tr.From, tr.Event}]; !ok {
			t.Errorf("Transitions row %+v is not in the spec", tr)
		} else if to != tr.To {
			t.Errorf("Transitions row %+v: spec says To=%s", tr, to)
		}
	}
	for _, s := range States() {
		for _, e := range Events() {
			to, ok := Next(s, e)
			want, listed := spec[key{s, e}]
			switch {
			case listed && (!ok || to != want):
				t.Errorf("Next(%s, %s) = %s, %v; spec says %s", s, e, to, ok, want)
			case !listed && ok:
				t.Errorf("Next(%s, %s) = %s, true; spec has no such transition", s, e, to)
			}
		}
	}
	for k := range spec {
		if !slices.Contains(States(), k.from) || !slices.Contains(Events(), k.ev) {
			t.Errorf("spec row (%s, %s) uses a state or event the package does not define", k.from, k.ev)
		}
	}
}

// TestNamesMatchSpec holds States and Events against the two list lines
// ("`Network.State`: ..." and "`Network.Event`: ...") of spec 2.2.
func TestNamesMatchSpec(t *testing.T) {
	lists := map[string][]string{}
	for _, l := range specdoc.SectionOrSkip(t, "2.2").Lines {
		l = specdoc.Clean(l)
		for _, p := range []string{"Network.State:", "Network.Event:"} {
			if rest, ok := strings.CutPrefix(l, p); ok {
				for _, f := range strings.Split(strings.TrimSuffix(rest, "."), ",") {
					lists[p] = append(lists[p], strings.TrimSpace(f))
				}
			}
		}
	}
	if got, want := fmt.Sprint(States()), fmt.Sprint(lists["Network.State:"]); got != want {
		t.Errorf("States() = %s, spec lists %s", got, want)
	}
	if got, want := fmt.Sprint(Events()), fmt.Sprint(lists["Network.Event:"]); got != want {
		t.Errorf("Events() = %s, spec lists %s", got, want)
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		from State
		ev   Event
		to   State
		ok   bool
	}{
		{Allocated, ImplementNetwork, Implementing, true},
		{Shutdown, ImplementNetwork, "", false},     // must go back to Allocated first
		{Implemented, ImplementNetwork, "", false},  // no re-implement edge
		{Implementing, ImplementNetwork, "", false}, // no re-entry
		{Implementing, DestroyNetwork, "", false},   // GC cannot legally shut an Implementing network
		{Shutdown, OperationSucceeded, Allocated, true},
		{Destroy, OperationSucceeded, "", false},
	}
	for _, tc := range tests {
		to, ok := Next(tc.from, tc.ev)
		if to != tc.to || ok != tc.ok {
			t.Errorf("Next(%s, %s) = %q, %v; want %q, %v", tc.from, tc.ev, to, ok, tc.to, tc.ok)
		}
	}
}
