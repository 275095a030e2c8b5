package impl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// Issue 34 item 10, read in HighAvailabilityManagerImpl (apache/cloudstack@04913a45, server/src/main/
// java/com/cloud/ha/HighAvailabilityManagerImpl.java, restart and processWork; scheduleRestartForVmsOnHost
// and vmHasPendingHAJob at d4m14ndx/cloudstack@0bd0bc22, the same path) and HighAvailabilityDaoImpl
// (markPendingWorksAsInvestigating: TBASearch's rows set to Investigating, as
// HighAvailabilityDaoImplTest.testMarkPendingWorksAsInvestigating of an upstream copy pins it).

// TestScheduleRestartSkipsVMsWithPendingHAWork: scheduleRestartForVmsOnHost lists the host's pending HA
// items first and skips a VM whose last item is below max.retries; when every VM is skipped, no alert.
func TestScheduleRestartSkipsVMsWithPendingHAWork(t *testing.T) {
	cases := []struct {
		name      string
		tried     int
		step      haStep
		scheduled int // HA items after the call
		skipped   bool
	}{
		{"a pending item", 1, haInvestigating, 1, true},
		{"a finished item", 1, haDone, 2, false},
		{"no item", -1, "", 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, log, id := stallWorld(t, host.Down, vm.Running, vm.PowerOn, time.Hour, false)
			v := s.DB.VM(id)
			if c.tried >= 0 {
				s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: id, HostID: "h1", Step: c.step, PrevState: v.State,
					PrevUpdate: v.UpdateCount, TimesTried: c.tried, TimeToTry: s.Env.Now()})
			}
			s.ha.scheduleRestartForVmsOnHost(&Thread{Name: "AgentTaskPool-1"}, "h1", true)
			require.Len(t, s.DB.HaWorkOf(id), c.scheduled)
			require.Equal(t, c.skipped, log.count("as there is already a running HA job for it") == 1)
			require.Equal(t, c.skipped, log.count("ALERT: Host is down") == 0)
		})
	}
}

// TestStartMarksPendingHAWorkInvestigating: markPendingWorksAsInvestigating at start sets every row take
// would hand out (untaken, due, not Done or Cancelled), of any type, to Investigating.
func TestStartMarksPendingHAWorkInvestigating(t *testing.T) {
	db := NewDB(clockEnv{}, nil)
	now := clockEnv{}.Now()
	cases := []struct {
		name string
		w    HaWorkVO
		want haStep
	}{
		{"a scheduled restart, due", HaWorkVO{Type: haRestart, Step: haScheduled, TimeToTry: now}, haInvestigating},
		{"a CheckStop, due", HaWorkVO{Type: haCheckStop, Step: haScheduled, TimeToTry: now.Add(-time.Minute)}, haInvestigating},
		{"taken by a server", HaWorkVO{Type: haRestart, Step: haScheduled, TimeToTry: now, ServerID: "ms2", DateTaken: now}, haScheduled},
		{"due later", HaWorkVO{Type: haRestart, Step: haScheduled, TimeToTry: now.Add(time.Minute)}, haScheduled},
		{"done", HaWorkVO{Type: haRestart, Step: haDone, TimeToTry: now}, haDone},
		{"cancelled", HaWorkVO{Type: haRestart, Step: haCancelled, TimeToTry: now}, haCancelled},
	}
	ids := make([]int64, len(cases))
	for i, c := range cases {
		c.w.VMID = int64(i + 1)
		ids[i] = db.PersistHaWork(c.w).ID
	}
	require.Equal(t, 2, db.MarkPendingHaWorksAsInvestigating())
	for i, c := range cases {
		require.Equal(t, c.want, db.HaWorkOf(int64(i + 1))[0].Step, c.name)
	}
}
