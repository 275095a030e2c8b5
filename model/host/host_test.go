package host

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/csconform/csconform/model/internal/specdoc"
)

// wantTransitions is the spec 2.3 table transcribed by hand, one edge per
// row; "" is the (null) status of a host row not yet given one.
var wantTransitions = []struct{ from, event, to string }{
	{"", "AgentConnected", "Connecting"},
	{"Creating", "AgentConnected", "Connecting"},
	{"Creating", "Error", "Error"},
	{"Connecting", "AgentConnected", "Connecting"},
	{"Connecting", "Ready", "Up"},
	{"Connecting", "PingTimeout", "Alert"},
	{"Connecting", "ShutdownRequested", "Disconnected"},
	{"Connecting", "HostDown", "Down"},
	{"Connecting", "Ping", "Connecting"},
	{"Connecting", "ManagementServerDown", "Disconnected"},
	{"Connecting", "AgentDisconnected", "Alert"},
	{"Up", "PingTimeout", "Alert"},
	{"Up", "AgentDisconnected", "Alert"},
	{"Up", "ShutdownRequested", "Disconnected"},
	{"Up", "HostDown", "Down"},
	{"Up", "Ping", "Up"},
	{"Up", "AgentConnected", "Connecting"},
	{"Up", "ManagementServerDown", "Disconnected"},
	{"Up", "StartAgentRebalance", "Rebalancing"},
	{"Up", "Remove", "Removed"},
	{"Disconnected", "ShutdownRequested", "Disconnected"},
	{"Disconnected", "PingTimeout", "Alert"},
	{"Disconnected", "AgentConnected", "Connecting"},
	{"Disconnected", "Ping", "Up"},
	{"Disconnected", "HostDown", "Down"},
	{"Disconnected", "ManagementServerDown", "Disconnected"},
	{"Disconnected", "WaitedTooLong", "Alert"},
	{"Disconnected", "Remove", "Removed"},
	{"Disconnected", "AgentDisconnected", "Disconnected"},
	{"Down", "AgentConnected", "Connecting"},
	{"Down", "Remove", "Removed"},
	{"Down", "ManagementServerDown", "Down"},
	{"Down", "AgentDisconnected", "Down"},
	{"Down", "PingTimeout", "Down"},
	{"Down", "HostDown", "Down"},
	{"Alert", "AgentConnected", "Connecting"},
	{"Alert", "Ping", "Up"},
	{"Alert", "Remove", "Removed"},
	{"Alert", "ManagementServerDown", "Alert"},
	{"Alert", "AgentDisconnected", "Alert"},
	{"Alert", "ShutdownRequested", "Disconnected"},
	{"Alert", "HostDown", "Down"},
	{"Rebalancing", "RebalanceFailed", "Disconnected"},
	{"Rebalancing", "RebalanceCompleted", "Connecting"},
	{"Rebalancing", "ManagementServerDown", "Disconnected"},
	{"Rebalancing", "AgentConnected", "Connecting"},
	{"Rebalancing", "AgentDisconnected", "Rebalancing"},
	{"Error", "AgentConnected", "Connecting"},
}

// wantFlags is the spec 2.3 flags table: updateMS, checkMS, lostConnection.
var wantFlags = []struct {
	status              Status
	update, check, lost bool
}{
	{Creating, true, false, false},
	{Connecting, true, false, false},
	{Up, true, false, false},
	{Down, true, true, true},
	{Disconnected, true, true, true},
	{Alert, true, true, true},
	{Removed, true, false, true},
	{Error, true, false, true},
	{Rebalancing, true, false, true},
	{Unknown, false, false, false},
}

type key struct {
	from Status
	ev   Event
}

// edgeRE matches one "Event → To" entry, optionally restricted to some
// source statuses by a trailing "(X only)".
var edgeRE = regexp.MustCompile(`^(\w+)\s*→\s*(\w+)(?:\s*\((\w+) only\))?$`)

// specTransitions parses the "From | Event → To" table of spec 2.3.
func specTransitions(t *testing.T) map[key]Status {
	tab, err := specdoc.SectionOrSkip(t, "2.3").TableWithHeader("From", "Event → To")
	if err != nil {
		t.Fatal(err)
	}
	out := map[key]Status{}
	for _, r := range tab.Rows {
		if len(r) != 2 {
			t.Fatalf("malformed spec row %q", r)
		}
		var froms []Status
		for _, f := range strings.Split(r[0], "/") {
			f = strings.TrimSpace(f)
			if f == "(null)" {
				f = ""
			}
			froms = append(froms, Status(f))
		}
		for _, e := range strings.Split(r[1], ";") {
			m := edgeRE.FindStringSubmatch(strings.TrimSpace(e))
			if m == nil {
				t.Fatalf("cannot parse spec edge %q in row %q", e, r)
			}
			fs := froms
			if m[3] != "" {
				fs = []Status{Status(m[3])}
			}
			for _, f := range fs {
				k := key{f, Event(m[1])}
				if _, dup := out[k]; dup {
					t.Errorf("spec lists (%q, %s) twice", f, m[1])
				}
				out[k] = Status(m[2])
			}
		}
	}
	return out
}

func TestTransitionsMatchLiteral(t *testing.T) {
	if len(Transitions) != len(wantTransitions) {
		t.Fatalf("len(Transitions) = %d, want %d", len(Transitions), len(wantTransitions))
	}
	for i, w := range wantTransitions {
		if want := (Transition{Status(w.from), Event(w.event), Status(w.to)}); Transitions[i] != want {
			t.Errorf("Transitions[%d] = %+v, want %+v", i, Transitions[i], want)
		}
	}
}

func TestTransitionsMatchSpec(t *testing.T) {
	spec := specTransitions(t)
	if len(spec) == 0 {
		t.Fatal("no edges parsed from spec 2.3")
	}
	for _, tr := range Transitions {
		if to, ok := spec[key{tr.From, tr.Event}]; !ok {
			t.Errorf("Transitions row %+v is not in the spec", tr)
		} else if to != tr.To {
			t.Errorf("Transitions row %+v: spec says To=%s", tr, to)
		}
	}
	froms := append([]Status{""}, Statuses()...)
	for _, s := range froms {
		for _, e := range Events() {
			to, ok := Next(s, e)
			want, listed := spec[key{s, e}]
			switch {
			case listed && (!ok || to != want):
				t.Errorf("Next(%q, %s) = %s, %v; spec says %s", s, e, to, ok, want)
			case !listed && ok:
				t.Errorf("Next(%q, %s) = %s, true; spec has no such transition", s, e, to)
			}
		}
	}
	// Catch spec rows naming a status or event the package lacks; the
	// loop above would otherwise never look at them.
	known := map[key]bool{}
	for _, s := range froms {
		for _, e := range Events() {
			known[key{s, e}] = true
		}
	}
	for k := range spec {
		if !known[k] {
			t.Errorf("spec edge (%q, %s) uses a status or event the package does not define", k.from, k.ev)
		}
	}
}

func TestFlagsMatchLiteral(t *testing.T) {
	if len(wantFlags) != len(Statuses()) {
		t.Fatalf("literal flags table has %d rows, Statuses() %d", len(wantFlags), len(Statuses()))
	}
	for _, w := range wantFlags {
		s := w.status
		if s.UpdateManagementServer() != w.update || s.CheckManagementServer() != w.check || s.LostConnection() != w.lost {
			t.Errorf("%s flags = (%v, %v, %v), want (%v, %v, %v)", s,
				s.UpdateManagementServer(), s.CheckManagementServer(), s.LostConnection(), w.update, w.check, w.lost)
		}
	}
}

func TestFlagsMatchSpec(t *testing.T) {
	tab, err := specdoc.SectionOrSkip(t, "2.3").TableWithHeader("Status", "updateMS", "checkMS", "lostConnection")
	if err != nil {
		t.Fatal(err)
	}
	tf := func(c string) bool {
		if c != "T" && c != "F" {
			t.Fatalf("flag cell %q is neither T nor F", c)
		}
		return c == "T"
	}
	var names []string
	for _, r := range tab.Rows {
		s := Status(r[0])
		names = append(names, r[0])
		got := fmt.Sprint(s.UpdateManagementServer(), s.CheckManagementServer(), s.LostConnection())
		if want := fmt.Sprint(tf(r[1]), tf(r[2]), tf(r[3])); got != want {
			t.Errorf("%s flags = %s, spec says %s", s, got, want)
		}
	}
	if got, want := fmt.Sprint(Statuses()), fmt.Sprint(names); got != want {
		t.Errorf("Statuses() = %s, spec lists %s", got, want)
	}
}

// TestEventsMatchSpec holds Events against the "Events: ..." paragraph.
func TestEventsMatchSpec(t *testing.T) {
	var para []string
	in := false
	for _, l := range specdoc.SectionOrSkip(t, "2.3").Lines {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "Events:"); ok {
			in, l = true, rest
		}
		if !in {
			continue
		}
		if l == "" {
			break
		}
		para = append(para, l)
	}
	paren := regexp.MustCompile(`\s*\([^)]*\)`)
	var names []string
	for _, f := range strings.Split(strings.TrimSuffix(strings.Join(para, " "), "."), ",") {
		names = append(names, strings.TrimSpace(paren.ReplaceAllString(f, "")))
	}
	if got, want := fmt.Sprint(Events()), fmt.Sprint(names); got != want {
		t.Errorf("Events() = %s, spec lists %s", got, want)
	}
}

func TestMayReconnect(t *testing.T) {
	want := map[Status]bool{Connecting: true, Disconnected: true, Alert: true, Rebalancing: true}
	for _, s := range append([]Status{""}, Statuses()...) {
		if s.MayReconnect() != want[s] {
			t.Errorf("%q.MayReconnect() = %v, want %v", s, s.MayReconnect(), want[s])
		}
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		from Status
		ev   Event
		to   Status
		ok   bool
	}{
		{"", AgentConnected, Connecting, true},
		{"", EventError, "", false}, // Error applies to Creating only
		{Creating, EventError, Error, true},
		{Up, AgentDisconnected, Alert, true},
		{Up, ManagementServerDown, Disconnected, true},
		{Alert, AgentConnected, Connecting, true},
		{Connecting, Ready, Up, true},
		{Up, RequestAgentRebalance, "", false}, // in no edge
		{Removed, AgentConnected, "", false},
		{Unknown, Ping, "", false},
	}
	for _, tc := range tests {
		to, ok := Next(tc.from, tc.ev)
		if to != tc.to || ok != tc.ok {
			t.Errorf("Next(%q, %s) = %q, %v; want %q, %v", tc.from, tc.ev, to, ok, tc.to, tc.ok)
		}
	}
}
