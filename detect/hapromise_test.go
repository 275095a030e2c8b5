package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

// h builds a history: each event gets the next seq and a second of time.
type h []history.Event

func (x h) with(more ...history.Event) h {
	out := slices.Clone(x)
	for _, e := range more {
		e.Seq = int64(len(out) + 1)
		e.Time = time.Date(2026, 1, 1, 0, 0, len(out), 0, time.UTC)
		out = append(out, e)
	}
	return out
}

func logLine(actor, obj, line string) history.Event {
	return history.Event{Kind: history.Log, Actor: actor, Object: obj, Detail: line}
}

func vmState(actor, from, to string) history.Event {
	return history.Event{Kind: history.State, Actor: actor, Object: "vm:2", From: from, To: to}
}

func jobState(actor, job, from, to, detail string) history.Event {
	return history.Event{Kind: history.State, Actor: actor, Object: job, From: from, To: to, Detail: detail}
}

// a restart item whose first try force-stops web1 and fails its start (a CloudRuntimeException: the
// catch reschedules), as HA's own work: the worker submits the jobs, an executor runs them
// forcedStop: web1 running on its host gets an HA item, whose worker force-stops it through a work job
var forcedStop = h{}.with(
	vmState("api", "", "Stopped"),
	vmState("Work-Job-Executor-1", "Stopped", "Starting"),
	vmState("Work-Job-Executor-1", "Starting", "Running"),
	logLine("AgentTaskPool-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
	logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Investigating]"),
	jobState("HA-Worker-0", "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
	vmState("Work-Job-Executor-4", "Running", "Stopping"),
	vmState("Work-Job-Executor-4", "Stopping", "Stopped"),
	jobState("Work-Job-Executor-4", "job:7", "IN_PROGRESS", "SUCCEEDED", ""),
)

var firstTry = forcedStop.with(
	jobState("HA-Worker-0", "job:8", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2"),
	vmState("Work-Job-Executor-5", "Stopped", "Starting"),
	vmState("Work-Job-Executor-5", "Starting", "Stopped"),
	jobState("Work-Job-Executor-5", "job:8", "IN_PROGRESS", "FAILED", ""),
	logLine("HA-Worker-0", "vm:2", "Encountered unhandled exception during HA process, reschedule work: CloudRuntimeException: Unable to start"),
	logLine("HA-Worker-0", "vm:2", "Rescheduling work HAWork[1-HA-2-Running-Scheduled] to try again at 00:16:50"),
)

// the next try: the item's capture is the old one, so HA finds web1 changed and ends the item
var dropped = firstTry.with(
	logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Scheduled]"),
	logLine("HA-Worker-0", "vm:2", "VM web1 has been changed.  Current State = Stopped Previous State = Running last updated = 7 previous updated = 3"),
	logLine("HA-Worker-0", "vm:2", "Completed work HAWork[1-HA-2-Running-Done]"),
)

// the fix: the item took web1 anew, the next try starts it
var restarted = firstTry.with(
	logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Stopped-Scheduled]"),
	jobState("HA-Worker-0", "job:9", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2"),
	vmState("Work-Job-Executor-6", "Stopped", "Starting"),
	vmState("Work-Job-Executor-6", "Starting", "Running"),
	jobState("Work-Job-Executor-6", "job:9", "IN_PROGRESS", "SUCCEEDED", ""),
	logLine("HA-Worker-0", "vm:2", "HA is now restarting web1 on h1"),
	logLine("HA-Worker-0", "vm:2", "Completed work HAWork[1-HA-2-Stopped-Done]"),
)

func tries(n int, end string) h {
	x := h{}.with(vmState("api", "", "Stopped"),
		logLine("AgentTaskPool-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Stopped-Scheduled])"))
	for i := 0; i < n; i++ {
		x = x.with(logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Stopped-Scheduled]"),
			logLine("HA-Worker-0", "vm:2", "Unable to restart web1 due to InsufficientServerCapacityException"))
		if i < n-1 {
			x = x.with(logLine("HA-Worker-0", "vm:2", "Rescheduling work HAWork[1-HA-2-Stopped-Scheduled] to try again at 00:10:00"))
		}
	}
	return x.with(logLine("HA-Worker-0", "vm:2", end))
}

const postpone = "There is pending job or HA tasks working on the VM. vm: web1, postpone power-change report by resetting power-change counters."

func TestHaPromise(t *testing.T) {
	ha := func(string) bool { return true }
	for _, c := range []struct {
		name      string
		events    h
		haEnabled func(string) bool
		want      []string // the violations' messages, by prefix
	}{
		// HA drops a VM only its own tries moved (H3, the catalogue's ha-restart-failure-keeps-old-capture)
		{"dropped after its own failed try", dropped, ha, []string{"HA ended HAWork 1 of vm:2 as if the VM had been changed"}},
		{"restarted", restarted, ha, nil},
		{"not HA-enabled: HA promises nothing", dropped, func(string) bool { return false }, nil},
		{"a client stopped it meanwhile", firstTry.with(
			history.Event{Kind: history.Call, Actor: "client-1", Object: "vm:2", Detail: "stop web1"},
			logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Scheduled]"),
			logLine("HA-Worker-0", "vm:2", "VM web1 has been changed.  Current State = Stopped Previous State = Running last updated = 8 previous updated = 3"),
			logLine("HA-Worker-0", "vm:2", "Completed work HAWork[1-HA-2-Running-Done]")), ha, nil},
		{"changed before the item's first line (a caller's copy)", dropped[:3].with(
			vmState("AgentTaskPool-2", "Running", "Stopped"), // before the item, after its caller's read
			logLine("AgentTaskPool-3", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
			logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Investigating]"),
			logLine("HA-Worker-0", "vm:2", "VM web1 has been changed.  Current State = Stopped Previous State = Running last updated = 4 previous updated = 3"),
			logLine("HA-Worker-0", "vm:2", "Completed work HAWork[1-HA-2-Running-Done]")), ha, nil},
		{"another thread moved it inside the try", h{}.with(
			vmState("api", "", "Running"),
			logLine("API-Job-Executor-1", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Scheduled])"),
			logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Scheduled]"),
			vmState("API-Job-Executor-1", "Running", "Stopped"), // deleteHost's sweep
			logLine("HA-Worker-0", "vm:2", "VM web1 has been changed.  Current State = Stopped Previous State = Running last updated = 2 previous updated = 1"),
			logLine("HA-Worker-0", "vm:2", "Completed work HAWork[1-HA-2-Running-Done]")), ha, nil},
		{"dropped but running again at the end", dropped.with(vmState("AgentTaskPool-9", "Stopped", "Running")), ha, nil},
		// max.retries (the catalogue's ha-gives-up-after-two-tries)
		{"gave up after two tries", tries(2, "Giving up, retried max times for work: HAWork[1-HA-2-Stopped-Scheduled]"), ha, []string{"HA gave up HAWork 1 of vm:2 after 2 tries"}},
		{"gave up after max.retries", tries(MaxRetries, "Giving up, retried max times for work: HAWork[1-HA-2-Stopped-Scheduled]"), ha, nil},
		// a hold with no reason (the catalogue's ha-cancelled-item-keeps-holding)
		{"postponed after the item was cancelled", h{}.with(
			vmState("api", "", "Running"),
			logLine("DisconnectTask-1", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
			logLine("HA-Worker-0", "vm:2", "Processing work HAWork[1-HA-2-Running-Investigating]"),
			logLine("HA-Worker-0", "vm:2", "Cancelling HAWork[1-HA-2-Running-Cancelled] as it is not needed anymore"),
			logLine("AgentTaskPool-4", "vm:2", postpone)), ha, []string{"a power report of vm:2 was postponed for pending work while it had none"}},
		{"postponed while the item is open", h{}.with(
			logLine("DisconnectTask-1", "vm:2", "Schedule vm for HA: web1 (HAWork[1-HA-2-Running-Investigating])"),
			logLine("AgentTaskPool-4", "vm:2", postpone)), ha, nil},
		{"postponed while a work job runs", h{}.with(
			jobState("API-Job-Executor-2", "job:3", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			logLine("AgentTaskPool-4", "vm:2", postpone)), ha, nil},
		{"postponed after the work job ended", h{}.with(
			jobState("API-Job-Executor-2", "job:3", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2"),
			jobState("Work-Job-Executor-2", "job:3", "IN_PROGRESS", "SUCCEEDED", ""),
			logLine("AgentTaskPool-4", "vm:2", postpone)), ha, []string{"a power report of vm:2 was postponed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := HaPromise(slices.Values(c.events), c.haEnabled)
			var got []string
			for _, v := range vs {
				assert.Equal(t, "ha-promise", v.Invariant)
				got = append(got, v.Message)
			}
			if assert.Len(t, got, len(c.want), "%q", got) {
				for i, w := range c.want {
					assert.Contains(t, got[i], w)
				}
			}
		})
	}
}

// HaItems follows each item through its tries by the worker that took it.
func TestHaItemsReadsTheTries(t *testing.T) {
	items := HaItems(slices.Values(dropped))
	if assert.Len(t, items, 1) {
		it := items[0]
		assert.Equal(t, int64(1), it.ID)
		assert.Equal(t, "HA", it.Type)
		assert.Equal(t, "vm:2", it.VM)
		assert.Equal(t, "done", it.End)
		assert.Len(t, it.Tries, 2)
		assert.Contains(t, it.Tries[1].Lines, "VM web1 has been changed.  Current State = Stopped Previous State = Running last updated = 7 previous updated = 3")
	}
}

// A try cut by its server's stop (no line ends it) is the server-restart path, left unjudged until
// it has its switch (docs/profiles.md, H3).
func TestHaPromiseLeavesTheServerRestartPathAlone(t *testing.T) {
	cut := forcedStop.with(
		// the server restarts; its next incarnation takes the released item
		logLine("HA-Worker-2", "vm:2", "Processing work HAWork[1-HA-2-Running-Investigating]"),
		logLine("HA-Worker-2", "vm:2", "VM web1 has been changed.  Current State = Stopped Previous State = Running last updated = 3 previous updated = 1"),
		logLine("HA-Worker-2", "vm:2", "Completed work HAWork[1-HA-2-Running-Done]"),
	)
	assert.Empty(t, HaPromise(slices.Values(cut), func(string) bool { return true }))
}
