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

// TestHARestartChecksBeforeTheStart pins the early returns of HighAvailabilityManagerImpl.restart
// (apache/cloudstack@04913a4593e755f617f70f9b85cecef878057dfc, server/src/main/java/com/cloud/ha/
// HighAvailabilityManagerImpl.java, restart), in the Java's order: a newer HA item of the VM ends this
// one (listFutureHaWorkForVm); another HA item a worker holds puts it off for
// investigate.retry.interval (listRunningHaWorkForVm); a VM gone ends it; a VM whose state or update
// count is not the item's ends it ("has been changed"); at step Investigating, a VM no longer on the
// item's host ends it; after the investigation, a VM not HA-enabled (ForceHA off) ends it. None of these
// starts anything.
func TestHARestartChecksBeforeTheStart(t *testing.T) {
	cases := []struct {
		name  string
		setup func(s *Server, v *VMVO, w *HaWorkVO)
		step  haStep
		again time.Duration // after now; -1: done
		line  string
	}{
		{"a newer item", func(s *Server, v *VMVO, w *HaWorkVO) {
			s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: v.ID, HostID: "h1", Step: haInvestigating, TimeToTry: s.Env.Now()})
		}, haInvestigating, -1, "Cancelling this work item because newer ones have been scheduled."},
		{"an older item a worker holds", func(s *Server, v *VMVO, w *HaWorkVO) {
			o := s.DB.HaWorkOf(v.ID)[0] // persisted before this one: see below
			o.ServerID, o.DateTaken = "ms1", s.Env.Now()
			s.DB.UpdateHaWork(o)
		}, haInvestigating, time.Minute, "Waiting because there's HA work being executed on an item currently."},
		{"the VM removed", func(s *Server, v *VMVO, w *HaWorkVO) { s.DB.vms[v.ID].Removed = true },
			haInvestigating, -1, "Unable to find vm"},
		{"the VM changed", func(s *Server, v *VMVO, w *HaWorkVO) { w.PrevUpdate-- },
			haInvestigating, -1, "has been changed."},
		{"the VM on another host", func(s *Server, v *VMVO, w *HaWorkVO) { s.DB.vms[v.ID].HostID = "h2" },
			haInvestigating, -1, "is now no longer on host h1"},
		{"not HA-enabled", func(s *Server, v *VMVO, w *HaWorkVO) {}, haScheduled, -1, "VM is not HA enabled so we're done."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, log, id := stallWorld(t, host.Up, vm.Running, vm.PowerOn, time.Minute, false)
			if c.name == "an older item a worker holds" {
				s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: id, HostID: "h1", Step: haInvestigating, TimeToTry: s.Env.Now()})
			}
			v := s.DB.VM(id)
			w := s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: id, HostID: "h1", Step: c.step, PrevState: v.State,
				PrevUpdate: v.UpdateCount, TimeToTry: s.Env.Now()})
			c.setup(s, v, w)
			next := s.ha.restart(&Thread{Name: "HA-Worker-0"}, w)
			if c.again < 0 {
				require.True(t, next.IsZero(), "done")
			} else {
				require.Equal(t, s.Env.Now().Add(c.again), next)
			}
			require.Equal(t, 1, log.count(c.line))
			require.Zero(t, log.count("RESTART")-1, "one round")
			require.Equal(t, vm.Running, s.DB.VM(id).State, "nothing stopped or started")
		})
	}
}
