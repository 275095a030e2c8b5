package impl_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// The start half of HighAvailabilityManagerImpl.restart, read at apache/cloudstack@04913a4593e755f617f70f9b85cecef878057dfc
// (server/src/main/java/com/cloud/ha/HighAvailabilityManagerImpl.java: restart, startVm, processWork;
// the same in d4m14ndx/cloudstack@0bd0bc22c42a5d34cb2d58670ea54d8f1af1531c) with
// VirtualMachineManagerImpl.orchestrateStart and advanceStart at bhouse-nexthop/cloudstack@017c41e8d1f066cfa950d03c0ed3bdff9d998384
// (engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java, the 4.22 fork):
//   - restart calls startVm(vm, params, null) in the HA worker's thread (advanceStart queues the
//     VmWorkStart job and waits for it); an InsufficientCapacityException from it is logged ("Failed to
//     deploy vm … with original planner, sending HAPlanner") and startVm runs a second time with the
//     HA planner;
//   - restart's catch blocks name InsufficientCapacityException, ResourceUnavailableException,
//     ConcurrentOperationException and OperationTimedoutException ("Unable to restart … due to …"); after
//     them, or after a start that returned with the VM not Running ("Rescheduling VM …"), the item takes
//     the VM's state and update count as they are now and is tried again after restart.retry.interval;
//   - anything else (a CloudRuntimeException: orchestrateStart's "Unable to start Instance" once its
//     attempts ran out, its "Unable to create a deployment … Last known error" for an admin caller,
//     changeToStartState's "Cannot start … in … state") goes through to processWork's catch
//     ("Encountered unhandled exception during HA process, reschedule work"): the item goes back for
//     restart.retry.interval with the state and update count of the VM as processWork read it before
//     restart — the item's own — so the next round finds the VM changed by the failed start and ends
//     the item ("has been changed"): HA does not try that VM again (H3). The releases before the
//     vm.ha.enabled gate moved that read up re-read the VM in the catch ("if restart failed in the
//     middle due to exception, VM state may has been changed; recapture into the HA worker so that it
//     can really continue in it next turn": shapeblue/cloudstack@134a5c0e4c9e1dc3438e931700793013edcb1f86,
//     the same path, processWork), which is H3's fix: the item is tried max.retries times;
//   - orchestrateStart's planner finding no host throws InsufficientServerCapacityException when no
//     attempt failed before (lastKnownError null).

// failingHost refuses to start one domain while fail is set (libvirt's error: a failed StartAnswer) and
// counts those tries.
type failingHost struct {
	*sim.Host
	name   string
	fail   bool
	starts int
}

func (h *failingHost) Start(d impl.DomainSpec) error {
	if h.fail && d.Name == h.name {
		h.starts++
		return errors.New("internal error: process exited while connecting to monitor")
	}
	return h.Host.Start(d)
}

// haStoppedWorld deploys HA-enabled web1 on h1 (hv) and stops it; the caller then schedules its restart.
func haStoppedWorld(t *testing.T, overrides map[string]string, hv func(w *simServer) impl.Hypervisor) (*simServer, *impl.VMVO) {
	t.Helper()
	return haStoppedWorldWith(t, impl.Switches{}, overrides, hv)
}

func haStoppedWorldWith(t *testing.T, sw impl.Switches, overrides map[string]string, hv func(w *simServer) impl.Hypervisor) (*simServer, *impl.VMVO) {
	t.Helper()
	w := newSimServer(t, 3, overrides, sw)
	w.agent(t, "h1", hv(w))
	n := w.srv.CreateNetwork("n1", true, 4)
	v, j := w.srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	wait := func(j *impl.JobVO) {
		done := false
		w.s.Go("client", func() { require.NoError(t, w.srv.WaitJob(j)); done = true })
		require.NoError(t, w.s.RunUntil(w.s.Now().Add(10*time.Minute), func() bool { return done }))
		require.True(t, done)
	}
	wait(j)
	w.db.SetHAEnabled(v.ID, true)
	wait(w.srv.StopVirtualMachine(v.ID, false))
	require.Equal(t, vm.Stopped, w.db.VM(v.ID).State)
	return w, w.db.VM(v.ID)
}

func startJobs(w *simServer, id int64) int {
	return len(w.db.JobsFor("VirtualMachine", id, func(j *impl.JobVO) bool { return j.Cmd == "VmWorkStart" }))
}

// TestHARestartStartFailureIsUnhandled: web1's only start attempt (start.retry 1) gets a failed
// StartAnswer, so orchestrateStart throws "Unable to start Instance", a CloudRuntimeException restart
// does not catch. Under H3 processWork reschedules the item with its own state and update count, and
// the next round finds web1 changed and ends the item: one start in all, web1 left Stopped. Fixed (the
// catch takes the VM anew) tries max.retries (5) times and gives up. (Until issue 34 the reference
// caught every error of the start.)
func TestHARestartStartFailureIsUnhandled(t *testing.T) {
	for _, c := range []struct {
		name    string
		sw      impl.Switches
		end     string
		starts  int
		changed bool
	}{
		{"H3", impl.Switches{impl.H3: true}, "HA Done 1", 1, true},
		{"fixed", impl.Switches{}, "HA Done 5", 5, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hv *failingHost
			w, v := haStoppedWorldWith(t, c.sw, map[string]string{"start.retry": "1"}, func(w *simServer) impl.Hypervisor {
				hv = &failingHost{Host: sim.NewHost(w.s, "h1"), name: "web1"}
				return hv
			})
			hv.fail = true
			w.srv.ScheduleHaStartForTest(v.ID)
			done := func() bool { return slices.Contains(w.db.HaWorkForTest(v.ID), c.end) }
			require.NoError(t, w.s.RunUntil(w.s.Now().Add(3*time.Hour), done))
			require.Equal(t, []string{c.end}, w.db.HaWorkForTest(v.ID))
			require.Equal(t, c.starts, hv.starts, "HA's starts")
			require.True(t, w.log.has("HA-Worker", "Encountered unhandled exception during HA process, reschedule work: CloudRuntimeException: Unable to start Instance"))
			require.Equal(t, c.changed, w.log.has("HA-Worker", "VM web1 has been changed."))
			require.Equal(t, !c.changed, w.log.has("HA-Worker", "Giving up, retried max times"))
			require.False(t, w.log.has("HA-Worker", "Unable to restart web1"), "not one of restart's catch blocks")
			require.False(t, w.log.has("HA-Worker", "Rescheduling VM web1"), "the start threw")
			require.Equal(t, vm.Stopped, w.db.VM(v.ID).State)
		})
	}
}

// TestHARestartRetriesWithTheHAPlannerOnInsufficientCapacity: with h1 (the only host) not Up, the
// planner finds no host at web1's first attempt: InsufficientServerCapacityException. restart starts
// web1 a second time with the HA planner, which fails the same way; its catch logs "Unable to restart",
// the item takes web1's state and update count as they are now, and the next round (which so finds web1
// unchanged) does the same: two VmWorkStart jobs a round.
func TestHARestartRetriesWithTheHAPlannerOnInsufficientCapacity(t *testing.T) {
	w, v := haStoppedWorld(t, nil, func(w *simServer) impl.Hypervisor { return sim.NewHost(w.s, "h1") })
	before := startJobs(w, v.ID)
	w.f.Cut("h1", true)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(30*time.Minute), func() bool { return !w.up("h1") }))
	require.NotEqual(t, host.Up, w.db.Host("h1").Status)
	w.srv.ScheduleHaStartForTest(v.ID)
	tried := func(n int) func() bool {
		return func() bool { return slices.Contains(w.db.HaWorkForTest(v.ID), "HA Scheduled "+string(rune('0'+n))) }
	}
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Hour), tried(1)))
	require.Equal(t, []string{"HA Scheduled 1"}, w.db.HaWorkForTest(v.ID))
	require.Equal(t, 2, startJobs(w, v.ID)-before, "the original planner, then the HA planner")
	require.True(t, w.log.has("HA-Worker", "Failed to deploy vm web1 with original planner, sending HAPlanner"))
	require.True(t, w.log.has("HA-Worker", "Unable to restart web1 due to InsufficientServerCapacityException: Unable to create a deployment for web1"))
	require.False(t, w.log.has("HA-Worker", "Encountered unhandled exception"))
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Hour), tried(2)))
	require.Equal(t, 4, startJobs(w, v.ID)-before, "the item took web1's new update count: the next round starts again")
	require.False(t, w.log.has("HA-Worker", "VM web1 has been changed."))
	require.Equal(t, vm.Stopped, w.db.VM(v.ID).State)
}
