package vm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/csconform/csconform/model/internal/specdoc"
)

// wantTransitions is spec table 2.1.3 transcribed by hand, with plain
// strings so that a typo in a constant cannot hide on both sides.
var wantTransitions = []struct {
	from, event, to string
	usage           bool
}{
	{"Stopped", "StartRequested", "Starting", false},
	{"Stopped", "DestroyRequested", "Destroyed", true},
	{"Stopped", "StopRequested", "Stopped", false},
	{"Stopped", "AgentReportStopped", "Stopped", false},
	{"Stopped", "OperationFailedToError", "Error", true},
	{"Stopped", "OperationFailed", "Stopped", false},
	{"Stopped", "ExpungeOperation", "Expunging", true},
	{"Stopped", "AgentReportShutdowned", "Stopped", false},
	{"Stopped", "StorageMigrationRequested", "Migrating", false},
	{"Stopped", "FollowAgentPowerOnReport", "Running", true},
	{"Stopped", "FollowAgentPowerOffReport", "Stopped", false},
	{"Starting", "OperationRetry", "Starting", false},
	{"Starting", "OperationSucceeded", "Running", true},
	{"Starting", "OperationFailed", "Stopped", false},
	{"Starting", "AgentReportRunning", "Running", true},
	{"Starting", "AgentReportStopped", "Stopped", false},
	{"Starting", "AgentReportShutdowned", "Stopped", false},
	{"Starting", "FollowAgentPowerOnReport", "Running", true},
	{"Starting", "FollowAgentPowerOffReport", "Stopped", false},
	{"Destroyed", "RecoveryRequested", "Stopped", true},
	{"Destroyed", "ExpungeOperation", "Expunging", false},
	{"Running", "MigrationRequested", "Migrating", false},
	{"Running", "AgentReportRunning", "Running", false},
	{"Running", "AgentReportStopped", "Stopped", true},
	{"Running", "StopRequested", "Stopping", false},
	{"Running", "AgentReportShutdowned", "Stopped", true},
	{"Running", "AgentReportMigrated", "Running", false},
	{"Running", "OperationSucceeded", "Running", false},
	{"Running", "FollowAgentPowerOnReport", "Running", false},
	{"Running", "FollowAgentPowerOffReport", "Stopped", true},
	{"Migrating", "MigrationRequested", "Migrating", false},
	{"Migrating", "OperationSucceeded", "Running", false},
	{"Migrating", "OperationFailed", "Running", false},
	{"Migrating", "AgentReportRunning", "Running", false},
	{"Migrating", "AgentReportStopped", "Stopped", false},
	{"Migrating", "AgentReportShutdowned", "Stopped", false},
	{"Migrating", "FollowAgentPowerOnReport", "Running", false},
	{"Migrating", "FollowAgentPowerOffReport", "Stopped", false},
	{"Stopping", "OperationSucceeded", "Stopped", true},
	{"Stopping", "OperationFailed", "Running", false},
	{"Stopping", "AgentReportRunning", "Running", false},
	{"Stopping", "AgentReportStopped", "Stopped", true},
	{"Stopping", "StopRequested", "Stopping", false},
	{"Stopping", "AgentReportShutdowned", "Stopped", true},
	{"Stopping", "FollowAgentPowerOnReport", "Running", false},
	{"Stopping", "FollowAgentPowerOffReport", "Stopped", true},
	{"Expunging", "OperationFailed", "Expunging", false},
	{"Expunging", "ExpungeOperation", "Expunging", false},
	{"Error", "DestroyRequested", "Expunging", false},
	{"Error", "ExpungeOperation", "Expunging", false},
}

func TestTransitionsMatchLiteral(t *testing.T) {
	if len(Transitions) != len(wantTransitions) {
		t.Fatalf("len(Transitions) = %d, want %d", len(Transitions), len(wantTransitions))
	}
	for i, w := range wantTransitions {
		got := Transitions[i]
		want := Transition{State(w.from), Event(w.event), State(w.to), w.usage}
		if got != want {
			t.Errorf("Transitions[%d] = %+v, want %+v", i, got, want)
		}
	}
}

func TestTransitionsMatchSpec(t *testing.T) {
	tab, err := specdoc.SectionOrSkip(t, "2.1.3").TableWithHeader("From", "Event", "To", "U")
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		from State
		ev   Event
	}
	spec := map[key]Transition{}
	var order []key
	for _, r := range tab.Rows {
		if len(r) != 4 || (r[3] != "" && r[3] != "U") {
			t.Fatalf("malformed spec row %q", r)
		}
		k := key{State(r[0]), Event(r[1])}
		if _, dup := spec[k]; dup {
			t.Errorf("spec lists (%s, %s) twice", k.from, k.ev)
		}
		spec[k] = Transition{k.from, k.ev, State(r[2]), r[3] == "U"}
		order = append(order, k)
	}
	for _, k := range order {
		want := spec[k]
		got, ok := Lookup(k.from, k.ev)
		if !ok {
			t.Errorf("spec row %+v missing from Transitions", want)
		} else if got != want {
			t.Errorf("Transitions has %+v, spec says %+v", got, want)
		}
	}
	for i, tr := range Transitions {
		if _, ok := spec[key{tr.From, tr.Event}]; !ok {
			t.Errorf("Transitions row %+v is not in the spec", tr)
		}
		if i < len(order) && (key{tr.From, tr.Event}) != order[i] {
			t.Errorf("Transitions[%d] is (%s, %s), spec's row %d is (%s, %s)", i, tr.From, tr.Event, i, order[i].from, order[i].ev)
		}
	}
	// Every pair the spec does not list must be rejected.
	for _, s := range States() {
		for _, e := range Events() {
			to, ok := Next(s, e)
			want, listed := spec[key{s, e}]
			switch {
			case listed && (!ok || to != want.To):
				t.Errorf("Next(%s, %s) = %s, %v; want %s, true", s, e, to, ok, want.To)
			case !listed && ok:
				t.Errorf("Next(%s, %s) = %s, true; spec has no such transition", s, e, to)
			}
		}
	}
}

func TestNoDuplicatePairs(t *testing.T) {
	seen := map[string]bool{}
	for _, tr := range Transitions {
		k := string(tr.From) + "/" + string(tr.Event)
		if seen[k] {
			t.Errorf("duplicate transition for %s", k)
		}
		seen[k] = true
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		from State
		ev   Event
		to   State
		ok   bool
	}{
		{Stopped, StartRequested, Starting, true},
		{Starting, OperationSucceeded, Running, true},
		{Starting, StopRequested, "", false}, // no Stopping path from Starting
		{Destroyed, FollowAgentPowerOnReport, "", false},
		{Error, DestroyRequested, Expunging, true},
		{Unknown, StartRequested, "", false},
		{Shutdown, OperationSucceeded, "", false},
		{Running, CreateRequested, "", false},
		{"", StartRequested, "", false},
	}
	for _, tc := range tests {
		to, ok := Next(tc.from, tc.ev)
		if to != tc.to || ok != tc.ok {
			t.Errorf("Next(%q, %s) = %q, %v; want %q, %v", tc.from, tc.ev, to, ok, tc.to, tc.ok)
		}
	}
}

func TestStatesMatchSpec(t *testing.T) {
	tab, err := specdoc.SectionOrSkip(t, "2.1.1").TableWithHeader("State", "transitional?", "Notes")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r[0])
		s := State(r[0])
		if want := r[1] == "yes"; s.IsTransitional() != want {
			t.Errorf("%s.IsTransitional() = %v, spec says %q", s, s.IsTransitional(), r[1])
		}
	}
	if got, want := fmt.Sprint(States()), fmt.Sprint(names); got != want {
		t.Errorf("States() = %s, spec lists %s", got, want)
	}
}

func TestEventsMatchSpec(t *testing.T) {
	sec := specdoc.SectionOrSkip(t, "2.1.2")
	// The event list is the first non-heading paragraph, comma separated.
	var para []string
	for _, l := range sec.Lines[1:] {
		if strings.TrimSpace(l) == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, strings.TrimSpace(l))
	}
	var names []string
	for _, f := range strings.Split(strings.TrimSuffix(strings.Join(para, " "), "."), ",") {
		names = append(names, strings.TrimSpace(f))
	}
	if got, want := fmt.Sprint(Events()), fmt.Sprint(names); got != want {
		t.Errorf("Events() = %s, spec lists %s", got, want)
	}
}

func TestPowerStatesMatchSpec(t *testing.T) {
	tab, err := specdoc.SectionOrSkip(t, "2.1.5").TableWithHeader("Value", "Meaning / producer")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r[0])
	}
	if got, want := fmt.Sprint(PowerStates()), fmt.Sprint(names); got != want {
		t.Errorf("PowerStates() = %s, spec lists %s", got, want)
	}
}

func TestIsTransitional(t *testing.T) {
	want := map[State]bool{Starting: true, Stopping: true, Expunging: true, Migrating: true}
	for _, s := range States() {
		if s.IsTransitional() != want[s] {
			t.Errorf("%s.IsTransitional() = %v, want %v", s, s.IsTransitional(), want[s])
		}
	}
}
