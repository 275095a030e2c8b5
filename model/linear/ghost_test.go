package linear

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/model/history"
)

// t0 is the start of the timed histories below.
var t0 = time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)

// at stamps an event with a virtual time, as the recorder does.
func at(d time.Duration, e history.Event) history.Event { e.Time = t0.Add(d); return e }

// obsRec is a VM observation as the harness writes it: the record's state in the detail.
func obsRec(obj string, on bool, record string) history.Event {
	e := obsVM(obj, on, false)
	e.Detail = "record " + record
	return e
}

func hostE(from, to string) history.Event {
	return history.Event{Kind: history.State, Actor: "AgentConnectTaskPool-1", Object: "host:h1", From: from, To: to}
}

// runBounds are CloudStack's defaults: ping.interval 60 s, so the ghost bound is 5 min and a host
// back Up reports after 2 × 60 s + 10 s.
var runBounds = Bounds{Ghost: 5 * time.Minute, ReportGrace: 130 * time.Second}

// ghosted: web1 is deployed, its domain crashes (the record may stay Running until power sync sees
// the domain missing: stale), and a start returns ok without starting anything, as CloudStack does
// for a VM whose record says Running. The planted bug: power sync never notices, and the record
// says Running with no domain for good. Then rest.
func ghosted(rest ...history.Event) []history.Event {
	const v = "vm:2"
	es := []history.Event{
		at(0, hostE("", "Connecting")), at(0, hostE("Connecting", "Up")),
		at(1*time.Second, callE(1, "c1", "network:1", "deploy web1")), at(1*time.Second, obsRec(v, false, "Starting")),
		at(4*time.Second, obsRec(v, true, "Running")), at(5*time.Second, ret(1, "c1", v, "ok")),
		at(time.Minute, fault("crash", v, true)), at(time.Minute, fault("crash", v, false)),
		at(61*time.Second, obsRec(v, false, "Running")),
		at(2*time.Minute, callE(2, "c2", v, "start web1")), at(121*time.Second, ret(2, "c2", v, "ok")),
		at(121*time.Second, obsRec(v, false, "Running")),
	}
	return h(append(es, rest...)...)
}

// TestStaleRecordIsBounded: the Stale rule lets a start succeed without a domain and observations see
// the record Running with no domain behind it; with the run's bounds, only until power sync must
// have noticed (Bounds.ghost).
func TestStaleRecordIsBounded(t *testing.T) {
	const v = "vm:2"
	cases := []struct {
		name    string
		events  []history.Event
		bounds  Bounds
		illegal bool
	}{
		{"a ghost record seen 7 min after the crash, past the 5 min bound (the planted bug)",
			ghosted(at(8*time.Minute, callE(3, "c3", v, "start web1")), at(8*time.Minute+time.Second, ret(3, "c3", v, "ok")),
				at(8*time.Minute+time.Second, obsRec(v, false, "Running"))), runBounds, true},
		{"the same history with no bound: the Stale excuse holds for ever",
			ghosted(at(8*time.Minute, callE(3, "c3", v, "start web1")), at(8*time.Minute+time.Second, ret(3, "c3", v, "ok")),
				at(8*time.Minute+time.Second, obsRec(v, false, "Running"))), Bounds{}, false},
		{"a ghost record within the bound",
			ghosted(at(5*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"power sync stops the record in time; a later start starts the domain",
			ghosted(at(4*time.Minute, obsRec(v, false, "Stopped")),
				at(8*time.Minute, callE(3, "c3", v, "start web1")), at(8*time.Minute+time.Second, obsRec(v, true, "Running")),
				at(8*time.Minute+2*time.Second, ret(3, "c3", v, "ok"))), runBounds, false},
		{"the record went Stopped and a stale report revived it: the clock restarts",
			ghosted(at(4*time.Minute, obsRec(v, false, "Stopped")), at(7*time.Minute, obsRec(v, false, "Running")),
				at(11*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"the revived ghost outlives the bound too",
			ghosted(at(4*time.Minute, obsRec(v, false, "Stopped")), at(7*time.Minute, obsRec(v, false, "Running")),
				at(12*time.Minute+time.Second, obsRec(v, false, "Running"))), runBounds, true},
		{"the host was away: no report could end the ghost, and its clock counts from the report grace",
			ghosted(at(3*time.Minute, hostE("Up", "Alert")), at(6*time.Minute, hostE("Alert", "Connecting")), at(6*time.Minute, hostE("Connecting", "Up")),
				at(10*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"the host was away, and the ghost outlives the bound after its report grace",
			ghosted(at(3*time.Minute, hostE("Up", "Alert")), at(6*time.Minute, hostE("Alert", "Connecting")), at(6*time.Minute, hostE("Connecting", "Up")),
				at(13*time.Minute+11*time.Second, obsRec(v, false, "Running"))), runBounds, true},
		{"the management server was restarting: no report could end the ghost, and its clock counts from the report grace after it",
			ghosted(at(3*time.Minute, fault("ms-restart", "ms", true)), at(6*time.Minute, fault("ms-restart", "ms", false)),
				at(10*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"the management server was restarting, and the ghost outlives the bound after its report grace",
			ghosted(at(3*time.Minute, fault("ms-restart", "ms", true)), at(6*time.Minute, fault("ms-restart", "ms", false)),
				at(13*time.Minute+11*time.Second, obsRec(v, false, "Running"))), runBounds, true},
		// A peer's stop is a fault on the hosts it owned (harness Recorder.hostFaultWithin): their
		// reports stop until they reconnect to a survivor, and its VM work jobs stay IN_PROGRESS
		// until the survivor's heartbeat passes cluster.heartbeat.threshold (150 s) and
		// onManagementNodeLeft fails them; meanwhile VmPowerStateSyncManagerImpl.handlePowerStateReport
		// finds listPendingWorkJobs non-empty and postpones every report of the VM.
		{"a peer server stopped: no report could end the ghost, and its clock counts from the report grace after it",
			ghosted(at(3*time.Minute, fault("peer-stop", "ms", true)), at(9*time.Minute, fault("peer-stop", "ms", false)),
				at(13*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"a peer server stopped, and the ghost outlives the bound after its report grace",
			ghosted(at(3*time.Minute, fault("peer-stop", "ms", true)), at(9*time.Minute, fault("peer-stop", "ms", false)),
				at(16*time.Minute+11*time.Second, obsRec(v, false, "Running"))), runBounds, true},
		{"a link cut on the host: no report could end the ghost, and its clock counts from the report grace after it",
			ghosted(at(3*time.Minute, fault("disconnect", "host:h1", true)), at(6*time.Minute, fault("disconnect", "host:h1", false)),
				at(10*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"a stale report is no cut: the clock runs on",
			ghosted(at(3*time.Minute, fault("stale-report", "host:h1", true)), at(3*time.Minute, fault("stale-report", "host:h1", false)),
				at(8*time.Minute, obsRec(v, false, "Running"))), runBounds, true},
		{"the host is away at the observation",
			ghosted(at(3*time.Minute, hostE("Up", "Alert")), at(9*time.Minute, obsRec(v, false, "Running"))), runBounds, false},
		{"observations without times (older histories) are not bounded",
			h(callE(1, "c1", "network:1", "deploy web1"), obsRec(v, true, "Running"), ret(1, "c1", v, "ok"),
				fault("crash", v, true), fault("crash", v, false), obsRec(v, false, "Running"),
				callE(2, "c2", v, "start web1"), ret(2, "c2", v, "ok"), obsRec(v, false, "Running")), runBounds, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := Illegal(CheckWith(Partitions(c.events), 0, c.bounds))
			switch {
			case c.illegal && (len(bad) != 1 || bad[0].Object != v):
				t.Fatalf("want %s illegal, got %+v", v, bad)
			case !c.illegal && len(bad) > 0:
				t.Fatalf("%s is illegal:\n%s", bad[0].Object, strings.Join(bad[0].Explain, "\n"))
			case c.illegal && !strings.Contains(strings.Join(bad[0].Explain, "\n"), "no domain for"):
				t.Errorf("the explanation does not name the bound:\n%s", strings.Join(bad[0].Explain, "\n"))
			}
		})
	}
}

// TestPeerStopGhostHistory re-checks, with its run's bounds (ping.interval 20 s: ghost 100 s, report
// grace 50 s), the history explore --profile fixed --seed 2 found: ms1's destroyExpunge forwards its
// StopCommand to ms2 (h2's server), ms2 stops, the command fails on ms1 while h2's agent still stops
// the domain, and the start ms2 had queued stays a pending work job until ms1's heartbeat threshold
// (150 s) fails it. Power sync postpones every report of the VM meanwhile, so its record says Running
// with no domain for three minutes, all of them within the peer's stop. The invariants pause the
// ghost clock for a peer's stop; the VM model must too.
func TestPeerStopGhostHistory(t *testing.T) {
	events, err := history.ReadFile(filepath.Join("testdata", "histories", "explore-peer-stop-ghost.fixed.jsonl"), history.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bounds := Bounds{Ghost: 100 * time.Second, ReportGrace: 50 * time.Second}
	if bad := Illegal(CheckWith(Partitions(events), time.Minute, bounds)); len(bad) > 0 {
		t.Fatalf("%s is illegal:\n%s", bad[0].Object, strings.Join(bad[0].Explain, "\n"))
	}
}
