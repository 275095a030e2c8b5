package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// startingLeftByDeadServer deploys web1 on h1 and kills the management server while its network's
// router boots: web1 is Starting on h1 (OperationRetry wrote host_id) and no StartCommand for it was
// sent. A new incarnation (fixed: C2 off, so cleanupLeftOverJobs leaves web1 Starting) comes up; it
// returns once h1 is Up again, with the time of that.
func startingLeftByDeadServer(t *testing.T, overrides map[string]string) (*sim.Scheduler, *impl.DB, *eventLog, int64) {
	s, db, log, id, _ := leftByDeadServer(t, overrides, impl.Switches{}, "")
	return s, db, log, id
}

// leftByDeadServer is startingLeftByDeadServer with the switches of both incarnations and the moment
// of the kill: 10 s into the deploy (killAfter ""), or just after a log line containing killAfter.
func leftByDeadServer(t *testing.T, overrides map[string]string, sw impl.Switches, killAfter string) (*sim.Scheduler, *impl.DB, *eventLog, int64, *impl.Server) {
	return leftByDeadServerOn(t, func(s *sim.Scheduler, _ *impl.DB) impl.Hypervisor { return sim.NewHost(s, "h1") }, overrides, sw, killAfter)
}

// leftByDeadServerOn is leftByDeadServer with h1's hypervisor made by hv.
func leftByDeadServerOn(t *testing.T, hv func(*sim.Scheduler, *impl.DB) impl.Hypervisor, overrides map[string]string, sw impl.Switches, killAfter string) (*sim.Scheduler, *impl.DB, *eventLog, int64, *impl.Server) {
	w := newSimServer(t, 3, overrides, sw)
	s, f, db, log, cfg, srv := w.s, w.f, w.db, w.log, w.cfg, w.srv
	w.agent(t, "h1", hv(s, db))
	up := func() bool { return w.up("h1") }
	// Deploy shortly before h1's next ping, so the agent notices the dead server at once and its first
	// ping after reconnecting comes within the power-report graceful period of web1's last change:
	// then it is the stall scan, not the missing-VM report, that acts on that ping.
	require.NoError(t, s.RunFor(45*time.Second))
	n := srv.CreateNetwork("n1", false, 4)
	v, _ := srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	if killAfter == "" {
		require.NoError(t, s.RunFor(10*time.Second))
	} else {
		require.NoError(t, s.RunUntil(s.Now().Add(2*time.Minute), func() bool { return log.has("", killAfter) }))
		require.NoError(t, s.RunFor(50*time.Millisecond)) // the StartCommand reaches h1
	}
	cur := db.VM(v.ID)
	require.Equal(t, vm.Starting, cur.State, "web1 should be Starting at the kill")
	require.Equal(t, "h1", cur.HostID)
	f.Listen(false)
	s.Kill("ms/")
	require.NoError(t, s.RunFor(5*time.Second))
	f.Listen(true)
	srv = impl.NewServer("ms1", s, db, cfg, sw, f)
	srv.Start()
	if sw[impl.C2] {
		require.Equal(t, vm.Stopped, db.VM(v.ID).State, "C2 moves web1 to Stopped at the restart without asking h1")
	} else {
		require.Equal(t, vm.Starting, db.VM(v.ID).State, "fixed (C2 off) leaves web1 Starting at the restart")
	}
	require.NoError(t, s.RunUntil(s.Now().Add(3*time.Minute), up))
	require.True(t, up(), "h1 not Up again")
	return s, db, log, v.ID, srv
}

// VirtualMachineManagerImpl.processCommands runs scanStalledVMInTransitionStateOnUpHost after the
// report of every ping; the scan (gated by vm.sync.power.state.transitioning, read in configure) hands
// a VM in Starting with no work job in progress to handlePowerOffReportWithNoPendingJobsOnVM, whatever
// its power state's age: the threshold is vm.job.report.interval × 2 used as milliseconds (read in
// bhouse-nexthop/cloudstack@d4da80c5, the 4.22 branch). With the gate off, only the missing-VM report
// settles the VM, two ping intervals after its last change.
func TestStallScanSettlesStartingVMLeftByDeadServer(t *testing.T) {
	cases := []struct {
		name       string
		gate       string
		runFor     time.Duration // after h1 is Up again; its first ping comes one ping.interval later
		stallLines bool
	}{
		{"scan on (default)", "true", 70 * time.Second, true},
		{"scan off", "false", 70 * time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, db, log, id := startingLeftByDeadServer(t, map[string]string{"vm.sync.power.state.transitioning": c.gate})
			require.NoError(t, s.RunFor(c.runFor))
			v := db.VM(id)
			if c.stallLines {
				require.Equal(t, vm.Stopped, v.State, "the first ping of h1 after it is Up should settle web1")
				require.Empty(t, v.HostID)
				for _, nic := range db.Nics(id) {
					require.NotEqual(t, "Reserved", nic.State, "web1's NIC should be released")
				}
				require.True(t, log.has("AgentTaskPool", "is stalled in Starting on Up host h1"), "the stall scan did not act")
				require.True(t, log.has("AgentTaskPool", "we received a PowerOff report while there is no pending jobs"))
				return
			}
			require.Equal(t, vm.Starting, v.State, "without the scan nothing settles web1 at the first ping")
			require.False(t, log.has("", "is stalled in"))
		})
	}
}

// C2's fix: the restart leaves a VM whose StartCommand may have run on its host in Starting, and the
// host settles it once it is back: a domain that runs is reported and followed to Running (power sync,
// handlePowerOnReportWithNoPendingJobsOnVM), keeping its NIC; one that does not is stopped with
// checkBeforeCleanup and synced to Stopped by the stall scan (the test above). With C2 on, the
// restart's cleanupResources (AsyncJobManagerImpl, PR #8394; spec 3.1) moves it to Stopped at once.
// The start's op_it_work row (step Starting) makes the restart's cancelWorkItems schedule an HA
// restart with investigation; while that item is pending the reports are postponed
// (hasPendingHaWork), so it is the stall scan of a later ping that follows the domain to Running.
func TestC2FixLetsTheHostSettleAStartInFlight(t *testing.T) {
	s, db, log, id, _ := leftByDeadServer(t, nil, impl.Switches{}, "Sending StartCommand for web1")
	require.True(t, log.has("main", "Handling unfinished work item: ItWork[1-Starting-"), "cancelWorkItems did not see the start's row")
	require.NoError(t, s.RunUntil(s.Now().Add(3*time.Minute), func() bool { return db.VM(id).State == vm.Running }))
	v := db.VM(id)
	require.Equal(t, vm.Running, v.State, "h1 runs web1's domain: its report should have settled web1 Running")
	require.Equal(t, "h1", v.HostID)
	for _, nic := range db.Nics(id) {
		require.Equal(t, "Reserved", nic.State, "web1 runs: its NIC must stay reserved")
	}
	_, db, _, id, _ = leftByDeadServer(t, nil, impl.Switches{impl.C2: true}, "Sending StartCommand for web1")
	require.NotEqual(t, vm.Starting, db.VM(id).State)
}

// VirtualMachineManagerImpl.advanceStop (d4da80c5): a forced stop of a VM in Starting cannot take
// StopRequested (NoTransitionException); it cleans up (a StopCommand, then the resources released),
// moves the VM with AgentReportStopped to Stopped, then reaches the check that the VM is in Stopping and
// throws "We cannot proceed with stop VM … since it is not in 'Stopping' state": the VM is stopped
// and the stop fails.
func TestForcedStopOfStartingVMCleansUpThenFails(t *testing.T) {
	s, db, _, id, srv := leftByDeadServer(t, map[string]string{"vm.sync.power.state.transitioning": "false"}, impl.Switches{}, "")
	require.Equal(t, vm.Starting, db.VM(id).State)
	err := forcedStop(t, s, srv, id)
	require.ErrorContains(t, err, "since it is not in 'Stopping' state, current state: Stopped")
	require.Equal(t, vm.Stopped, db.VM(id).State)
	for _, nic := range db.Nics(id) {
		require.NotEqual(t, "Reserved", nic.State, "the cleanup releases web1's NIC")
	}
}

// forcedStop is a client's stopVirtualMachine forced=true of VM id, waited for (a minute at most).
func forcedStop(t *testing.T, s *sim.Scheduler, srv *impl.Server, id int64) error {
	t.Helper()
	j := srv.StopVirtualMachine(id, true)
	var err error
	done := false
	s.Go("client", func() { err = srv.WaitJob(j); done = true })
	require.NoError(t, s.RunUntil(s.Now().Add(time.Minute), func() bool { return done }))
	require.True(t, done, "the forced stop did not end within a minute")
	return err
}

// startCompletesAtStop is a host on which, as the first StopCommand for a domain arrives, that VM's
// row moves from Starting to Running: the start's own thread completing it while a forced stop's
// cleanup waits on its StopCommand (explore found it with an operator's host removal).
type startCompletesAtStop struct {
	*sim.Host
	db   *impl.DB
	done bool
}

func (h *startCompletesAtStop) Stop(name string) error {
	if v := h.db.VMByName(name); v != nil && !h.done && v.State == vm.Starting {
		h.done = true
		h.db.UpdateVMState("start", v, vm.OperationSucceeded, vm.Running, v.HostID)
	}
	return h.Host.Stop(name)
}

// VirtualMachineManagerImpl.advanceStop (bhouse-nexthop/cloudstack@d4da80c56eac6a4b67d90f12045750fc5febba59,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java, the 4.22 branch):
// after a forced stop's cleanup, changeState(vm, Event.AgentReportStopped, null, work, Step.Done)
// takes the VO advanceStop read at its start, and stateTransitTo's UPDATE is a compare-and-set on
// that copy's state and updated count. If the start completed meanwhile (the row Running), the
// update matches no row and the stop throws "Unable to stop": the row stays Running. The reference
// read the row again there and moved a Running VM to Stopped, a transition CloudStack does not make.
func TestForcedStopOfStartingVMKeepsTheCopyItRead(t *testing.T) {
	var h *startCompletesAtStop
	hv := func(s *sim.Scheduler, db *impl.DB) impl.Hypervisor {
		h = &startCompletesAtStop{Host: sim.NewHost(s, "h1"), db: db}
		return h
	}
	s, db, log, id, srv := leftByDeadServerOn(t, hv, map[string]string{"vm.sync.power.state.transitioning": "false"}, impl.Switches{}, "")
	require.Equal(t, vm.Starting, db.VM(id).State)
	err := forcedStop(t, s, srv, id)
	require.True(t, h.done, "the cleanup sent no StopCommand")
	require.ErrorContains(t, err, "Unable to stop")
	require.NotContains(t, err.Error(), "'Stopping' state", "the stop moved the row and went on to the Stopping check")
	require.Equal(t, vm.Running, db.VM(id).State, "the forced stop's AgentReportStopped must fail on the row the start moved")
	require.True(t, log.has("", "Unable to update"), "no failed compare-and-set logged")
}

// stopCounter is a host that counts the StopCommands it executes, by domain.
type stopCounter struct {
	*sim.Host
	stops map[string]int
}

func (h *stopCounter) Stop(name string) error {
	h.stops[name]++
	return h.Host.Stop(name)
}

// VirtualMachineManagerImpl.orchestrateStart (d4da80c5, spec 3.8 step 12): the per-attempt finally
// sets the work step to Release before cleanup, and cleanup sends a StopCommand for every step in
// Release, so a start that failed before its StartCommand (here: no address left at prepareNic) still
// stops the VM on the host it had been given.
func TestFailedStartSendsStopCommandFromRelease(t *testing.T) {
	w := newSimServer(t, 5, nil, impl.Switches{})
	s, db, srv := w.s, w.db, w.srv
	h := &stopCounter{Host: sim.NewHost(s, "h1"), stops: map[string]int{}}
	w.agent(t, "h1", h)
	n := srv.CreateNetwork("n1", false, 1)
	deploy := func(name string) (int64, error) {
		v, j := srv.DeployVirtualMachine(name, []int64{n.ID}, "h1")
		var err error
		done := false
		s.Go("client-"+name, func() { err = srv.WaitJob(j); done = true })
		require.NoError(t, s.RunUntil(s.Now().Add(5*time.Minute), func() bool { return done }))
		return v.ID, err
	}
	_, err := deploy("web1")
	require.NoError(t, err)
	id, err := deploy("web2")
	require.ErrorContains(t, err, "Insufficient address capacity")
	require.Equal(t, vm.Error, db.VM(id).State, "a failed deploy leaves the VM in Error")
	require.Equal(t, 2, h.stops["web2"], "one StopCommand per start attempt (the deploy retries once)")
}
