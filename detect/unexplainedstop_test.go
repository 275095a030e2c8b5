package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// unexplained-stop, on recorded histories: vm:2's domain goes off at +10m while its record says
// Running. The planted bug of its class is the bare case (a stop nobody asked for: an unchecked stop
// of a missing VM, a stop sent to the wrong host); each other row gives the stop a cause.
func TestUnexplainedStops(t *testing.T) {
	t0 := time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	stopAt := 10 * time.Minute
	base := []history.Event{
		{Time: at(time.Minute), Kind: history.Observe, Object: "vm:2", To: "on/live", Detail: "record Running"},
	}
	off := func(record string) history.Event {
		return history.Event{Time: at(stopAt), Kind: history.Observe, Object: "vm:2", To: "off/live", Detail: "record " + record}
	}
	op := func(id int, kind string, call, ret time.Duration) []history.Event {
		ev := []history.Event{{Time: at(call), Kind: history.Call, Object: "vm:2", Op: id, Detail: kind + " vm1"}}
		if ret > 0 {
			ev = append(ev, history.Event{Time: at(ret), Kind: history.Return, Object: "vm:2", Op: id, To: "ok", Detail: kind})
		}
		return ev
	}
	fault := func(kind, target string, begin, end time.Duration) []invariant.Fault {
		return []invariant.Fault{{Kind: kind, Targets: []string{target}, Begin: at(begin), End: at(end), Disruptive: true}}
	}
	for _, c := range []struct {
		name   string
		events []history.Event
		faults []invariant.Fault
		want   bool
	}{
		{"nothing explains it", nil, nil, true},
		{"the record said Stopped", nil, nil, false},
		{"a stop in flight", op(5, "stop", 9*time.Minute, 0), nil, false},
		{"a destroy that gave up 5 minutes before (its command ran late)", op(5, "destroyExpunge", 4*time.Minute, 5*time.Minute), nil, false},
		{"a deploy that returned 5 minutes before", op(5, "deploy", 2*time.Minute, 5*time.Minute), nil, true},
		{"the guest crashed just before", nil, fault("crash", "vm:2", stopAt-5*time.Second, stopAt-5*time.Second), false},
		{"a crash of another VM", nil, fault("crash", "vm:3", stopAt-5*time.Second, stopAt-5*time.Second), true},
		{"a host powered off 5 minutes before (HA)", nil, fault("host-power-off", "host:h1", 4*time.Minute, 5*time.Minute), false},
		{"a host fault 20 minutes before", nil, fault("disconnect", "host:h1", -20*time.Minute, -19*time.Minute), true},
		{"a stale report (it moves no domain)", nil, fault("stale-report", "host:h1", 8*time.Minute, 9*time.Minute), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			record := "Running"
			if c.name == "the record said Stopped" {
				record = "Stopped"
			}
			events := append(append(append([]history.Event{}, base...), c.events...), off(record))
			vs := UnexplainedStops(slices.Values(events), c.faults)
			assert.Equal(t, c.want, len(vs) == 1, "violations: %v", vs)
		})
	}
}
