package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

// A try ms2's worker began and never ended (ms2 stopped) must be taken up again by a peer by the
// bound (the catalogue's ha-left-server-items-not-released keeps it taken).
func TestLeftServerHaItems(t *testing.T) {
	at := func(sec int) time.Time { return time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC) }
	base := h{}.with(
		logLine("AgentTaskPool-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
		logLine("ms2:HA-Worker-1", "vm:2", "Processing work HAWork[1-HA-2-Running-Investigating]"),
		logLine("ms2:HA-Worker-1", "vm:2", "HA on web1"),
	) // at(0)..at(2)
	stop := ServerStop{Prefix: "ms2:", Name: "ms2", From: at(3), Due: at(10)}
	for _, c := range []struct {
		name   string
		events h
		want   int
	}{
		{"never taken up", base, 1},
		{"taken up by ms1 in time", base.with(logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Investigating]")), 0},
		{"taken up too late", append(slices.Clone(base), history.Event{Seq: 4, Time: at(20), Kind: history.Log, Actor: "HA-Worker-0", Object: "vm:2",
			Detail: "Processing work HAWork[1-HA-2-Running-Investigating]"}), 1},
		{"its try ended before the stop", base.with(logLine("ms2:HA-Worker-1", "vm:2", "Completed work HAWork[1-HA-2-Running-Done]")), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := LeftServerHaItems(HaItems(slices.Values(c.events)), []ServerStop{stop})
			assert.Len(t, vs, c.want)
			for _, v := range vs {
				assert.Equal(t, "left-server-job", v.Invariant)
				assert.Contains(t, v.Message, "HA work item 1 (HA of vm:2), taken by management server ms2")
			}
		})
	}
}
