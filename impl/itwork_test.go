package impl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
)

// VirtualMachineManagerImpl.changeToStartState and checkWorkItems (bhouse-nexthop/cloudstack@d4da80c5,
// the 4.22 branch; ItWorkDaoImpl.findByOutstandingWork at apache@1502b605): a start of a VM in a
// transitional state looks for an op_it_work row of that state whose step is not Done; while one
// exists and the VM is not Running it sleeps vm.op.wait.interval (120 s) and looks again, until the
// row has been inactive longer than vm.op.cancel.interval (3600 s), then fails with "There are
// concurrent operations". orchestrateStart leaves the row of a start whose StartCommand timed out at
// step Starting (canRetry = false skips the finally's Release/Done). Here web1's StartCommand waits on
// a cut link past `wait`; the deploy retries the start at once (VMEntityManagerImpl), and that second
// start finds the first one's row. Under 4.22 (C7) it waits on it for an hour: web1's queue is held,
// so its domain, booted once the link heals, is not followed to Running (the reports are postponed
// while a work job is pending) until the wait gives up. C7's fix fails it at once, no other work job
// running on web1, and the next report follows the domain.
func TestChangeToStartStateWaitsOnWorkItems(t *testing.T) {
	for _, c := range []struct {
		name    string
		sw      impl.Switches
		waits   int // rounds of vm.op.wait.interval
		settled time.Duration
	}{
		// the row was 2 min old when the wait began: 29 rounds take it past the hour
		{"cloudstack-4.22 (C7)", impl.Switches{impl.C7: true}, 29, 62 * time.Minute},
		{"fixed", impl.Switches{}, 0, 8 * time.Minute}, // the link heals 5 min after the send
	} {
		t.Run(c.name, func(t *testing.T) {
			w, v := deployedUntilStartSent(t, c.sw)
			s, f, log := w.s, w.f, w.log
			f.Cut("h1", true)
			require.NoError(t, s.RunFor(5*time.Minute))
			f.Cut("h1", false)
			row := w.db.FindOutstandingItWork(v.ID, vm.Starting)
			require.NotNil(t, row, "the timed-out start left no outstanding op_it_work row")
			require.Equal(t, impl.ItWorkStarting, row.Step)
			require.True(t, log.has("Work-Job-Executor", "Determining why we're unable to update the state to Starting for web1. Retry=4"))

			require.NoError(t, s.RunUntil(row.UpdatedAt.Add(70*time.Minute), func() bool { return w.db.VM(v.ID).State == vm.Running }))
			require.Equal(t, vm.Running, w.db.VM(v.ID).State, "the report never followed web1's domain")
			settled := s.Now().Sub(row.UpdatedAt)
			require.True(t, settled < c.settled, "web1 Running %s after the row's last step, want under %s", settled, c.settled)
			var failed time.Time
			waits := 0
			for _, e := range log.events {
				switch {
				case strings.Contains(e.Detail, "Waiting some more to make sure there's no activity on web1"):
					waits++
				case e.Kind == history.State && strings.Contains(e.To, "FAILED") && strings.Contains(e.Detail, "There are concurrent operations on web1"):
					failed = e.Time
				}
			}
			require.False(t, failed.IsZero(), "the second start did not fail")
			require.Equal(t, c.waits, waits)
			if c.waits > 0 {
				idle := failed.Sub(row.UpdatedAt)
				require.True(t, idle > time.Hour && idle < time.Hour+2*time.Minute, "gave up %s after the row's last step, want just past vm.op.cancel.interval", idle)
			} else {
				require.True(t, log.has("Work-Job-Executor", "belongs to no running job: this one holds the VM"))
			}
		})
	}
}

// VirtualMachineManagerImpl.cancelWorkItems, from start() (d4da80c5): a restarted server lists its
// own op_it_work rows not Done (listWorkInProgressFor), hands a start's to
// HighAvailabilityManager.scheduleRestart(vm, true) and marks it Done. web1's start dies with its
// server after the StartCommand was sent (row at step Starting).
func TestCancelWorkItemsHandsUnfinishedStartsToHA(t *testing.T) {
	_, db, log, id, _ := leftByDeadServer(t, nil, impl.Switches{}, "Sending StartCommand for web1")
	require.True(t, log.has("main", "Handling unfinished work item: ItWork[1-Starting-"))
	require.True(t, log.has("main", "Schedule vm for HA: web1 (HAWork[1-HA-"), "no HA restart with investigation")
	require.True(t, log.has("main", "-Starting-Investigating]"))
	require.Nil(t, db.FindOutstandingItWork(id, vm.Starting), "the row should be Done")
}
