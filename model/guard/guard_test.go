package guard

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

var t0 = time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)

var testCfg = Config{PingInterval: time.Minute, PingTimeout: 150 * time.Second, GCWait: 10 * time.Minute,
	JobExpire: 24 * time.Hour, JobCancel: time.Hour, Wait: 30 * time.Minute}

// h builds a history: each event at t0 plus its offset, numbered in order.
type h []history.Event

func (x h) add(at time.Duration, e history.Event) h {
	e.Seq = int64(len(x) + 1)
	e.Time = t0.Add(at)
	return append(x, e)
}

func st(actor, obj, from, to, detail string) history.Event {
	return history.Event{Actor: actor, Kind: history.State, Object: obj, From: from, To: to, Detail: detail}
}

func pw(actor, obj, from, to string) history.Event {
	return history.Event{Actor: actor, Kind: history.Power, Object: obj, From: from, To: to}
}

func lk(actor, net, to string) history.Event {
	return history.Event{Actor: actor, Kind: history.Lock, Object: "networks" + net, To: to}
}

func lg(actor, obj, detail string) history.Event {
	return history.Event{Actor: actor, Kind: history.Log, Object: obj, Detail: detail}
}

const (
	wj1  = "Work-Job-Executor-1"
	wj2  = "Work-Job-Executor-2"
	api  = "API-Job-Executor-1"
	rep  = "AgentTaskPool-3"
	hb   = "AsyncJobMgr-Heartbeat-2"
	gc   = "Network-Scavenger"
	disc = "DisconnectTask-4"
)

// a user VM created and started by wj1 inside its work job, Running from +1 m
func runningVM() h {
	return h{}.
		add(0, st("api", "vm:2", "", "Stopped", "created i-2-2-VM")).
		add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
		add(time.Second, st(wj1, "vm:2", "Stopped", "Starting", "i-2-2-VM StartRequested host=")).
		add(time.Second, st(wj1, "vm:2", "Starting", "Starting", "i-2-2-VM OperationRetry host=h1")).
		add(time.Minute, st(wj1, "vm:2", "Starting", "Running", "i-2-2-VM OperationSucceeded host=h1")).
		add(time.Minute, st(wj1, "job:5", "IN_PROGRESS", "SUCCEEDED", ""))
}

// a network implemented by wj1 for vm:2's start, with its router vm:3, Implemented from +40 s
func implementedNetwork() h {
	return h{}.
		add(0, st("api", "network:1", "", "Allocated", "created net1 10.1.1.0/24 persistent=false")).
		add(0, st("api", "vm:2", "", "Stopped", "created i-2-2-VM")).
		add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
		add(time.Second, st(wj1, "vm:2", "Stopped", "Starting", "i-2-2-VM StartRequested host=")).
		add(time.Second, st(wj1, "vm:2", "Starting", "Starting", "i-2-2-VM OperationRetry host=h1")).
		add(2*time.Second, lk(wj1, "1", "held")).
		add(2*time.Second, st(wj1, "network:1", "Allocated", "Implementing", "implementNetwork: ImplementNetwork")).
		add(2*time.Second, st(wj1, "vm:3", "", "Stopped", "created r-3-VM")).
		add(2*time.Second, st(wj1, "job:6", "", "IN_PROGRESS", "VmWorkStart(placeholder) VirtualMachine:3")).
		add(2*time.Second, st(wj1, "vm:3", "Stopped", "Starting", "r-3-VM StartRequested host=")).
		add(2*time.Second, st(wj1, "vm:3", "Starting", "Starting", "r-3-VM OperationRetry host=h1")).
		add(39*time.Second, st(wj1, "vm:3", "Starting", "Running", "r-3-VM OperationSucceeded host=h1")).
		add(39*time.Second, st(wj1, "job:6", "IN_PROGRESS", "SUCCEEDED", "")).
		add(40*time.Second, st(wj1, "network:1", "Implementing", "Implemented", "implementNetwork: OperationSucceeded")).
		add(40*time.Second, lk(wj1, "1", "released")).
		add(41*time.Second, st(wj1, "vm:2", "Starting", "Running", "i-2-2-VM OperationSucceeded host=h1")).
		add(41*time.Second, st(wj1, "job:5", "IN_PROGRESS", "SUCCEEDED", ""))
}

// stoppedAt: vm:2 stopped by its own work job at d
func (x h) stoppedAt(d time.Duration) h {
	return x.add(d, st(api, "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
		add(d, st(wj2, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
		add(d, st(wj2, "vm:2", "Stopping", "Stopped", "i-2-2-VM OperationSucceeded host=")).
		add(d, st(wj2, "job:9", "IN_PROGRESS", "SUCCEEDED", ""))
}

// sightedFirst: x with the network GC's (thread by's) "free for the first time" line for network:1
// right after its first event (the network's creation)
func sightedFirst(x h, by string) h {
	y := append(h{x[0]}, lg(by, "network:1", "We found network 1 to be free for the first time. Adding it to the list"))
	y[1].Time = x[0].Time
	y = append(y, x[1:]...)
	for i := range y {
		y[i].Seq = int64(i + 1)
	}
	return y
}

// gcShutdown: the network GC shuts network:1 down at d, stopping its router first when routerStops
func (x h) gcShutdown(d time.Duration, routerStops bool) h {
	x = x.add(d, lk(gc, "1", "held")).
		add(d, st(gc, "network:1", "Implemented", "Shutdown", "shutdownNetwork: DestroyNetwork"))
	if routerStops {
		x = x.add(d, st(gc, "job:10", "", "IN_PROGRESS", "VmWorkStop(placeholder) VirtualMachine:3")).
			add(d, st(gc, "vm:3", "Running", "Stopping", "r-3-VM StopRequested host=h1")).
			add(d, st(gc, "vm:3", "Stopping", "Stopped", "r-3-VM OperationSucceeded host=")).
			add(d, st(gc, "job:10", "IN_PROGRESS", "SUCCEEDED", ""))
	}
	return x.add(d, st(gc, "network:1", "Shutdown", "Allocated", "shutdownNetwork: OperationSucceeded")).
		add(d, lk(gc, "1", "released"))
}

// routerStoppedAt: the router vm:3 stopped in its own work job at d, as a forced stop does when its
// host is removed (ResourceManagerImpl's forced deleteHost): the record Stopped, its domain possibly
// still running
func (x h) routerStoppedAt(d time.Duration) h {
	return x.add(d, st(api, "job:11", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:3")).
		add(d, st(wj2, "vm:3", "Running", "Stopping", "r-3-VM StopRequested host=h1")).
		add(d, st(wj2, "vm:3", "Stopping", "Stopped", "r-3-VM OperationSucceeded host=")).
		add(d, st(wj2, "job:11", "IN_PROGRESS", "SUCCEEDED", ""))
}

// routerSynced: a power-on report at d moves the stopped router vm:3 to Running
// (handlePowerOnReportWithNoPendingJobsOnVM)
func (x h) routerSynced(d time.Duration) h {
	return x.add(d, pw(rep, "vm:3", "PowerOff", "PowerOn")).
		add(d, st(rep, "vm:3", "Stopped", "Running", "r-3-VM FollowAgentPowerOnReport host=h1"))
}

// gcShutdownAround: the network GC shuts network:1 down from d, its router's element shutdown
// (VirtualRouterElement.shutdown → stop) finding vm:3 already stopped; during runs between that and
// the OperationSucceeded at d+3s
func (x h) gcShutdownAround(d time.Duration, during func(h) h) h {
	x = x.add(d, lk(gc, "1", "held")).
		add(d, st(gc, "network:1", "Implemented", "Shutdown", "shutdownNetwork: DestroyNetwork")).
		add(d, st(gc, "job:12", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:3")).
		add(d, lg(wj1, "vm:3", "VM is already stopped: r-3-VM")).
		add(d, st(wj1, "job:12", "IN_PROGRESS", "SUCCEEDED", ""))
	x = during(x)
	return x.add(d+3*time.Second, st(gc, "network:1", "Shutdown", "Allocated", "shutdownNetwork: OperationSucceeded")).
		add(d+3*time.Second, lk(gc, "1", "released"))
}

// Each guard fails on a planted bug of its class and passes on the fix: the bug's history breaks
// only that guard, the fix's history none.
func TestEachGuardFailsOnItsBugAndPassesOnTheFix(t *testing.T) {
	cases := []struct {
		guard    string
		bug, fix h
	}{
		{GInStateMachine,
			h{}.add(0, st("api", "vm:2", "", "Stopped", "created i-2-2-VM")).add(time.Second, st(wj1, "vm:2", "Stopped", "Running", "i-2-2-VM OperationSucceeded host=h1")),
			runningVM()},
		{GReportThread,
			runningVM().stoppedAt(2*time.Minute).add(3*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(3*time.Minute, st(wj1, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1")),
			runningVM().stoppedAt(2*time.Minute).add(3*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(3*time.Minute, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1"))},
		{GReportNoPendingWork,
			// a power-on report followed during the VM's stop (its work job pending)
			runningVM().add(2*time.Minute, st(api, "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
				add(2*time.Minute, st(wj2, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
				add(2*time.Minute+time.Second, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(2*time.Minute+time.Second, st(rep, "vm:2", "Stopping", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1")),
			runningVM().stoppedAt(2*time.Minute).add(3*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(3*time.Minute, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1"))},
		{GReportFollowsPower,
			runningVM().stoppedAt(2*time.Minute).add(3*time.Minute, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1")),
			runningVM().stoppedAt(2*time.Minute).add(3*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(3*time.Minute, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1"))},
		{GReportNotStale,
			// C3: a report collected before the stop, handled after it
			runningVM().stoppedAt(2*time.Minute).
				add(2*time.Minute+time.Second, lg(rep, "host:h1", "Ping from Routing host h1 (out of band, collected 00:01:59.000)")).
				add(2*time.Minute+time.Second, lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 1, force: true")).
				add(2*time.Minute+time.Second, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(2*time.Minute+time.Second, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1")),
			runningVM().stoppedAt(2*time.Minute).
				add(2*time.Minute+time.Second, lg(rep, "host:h1", "Ping from Routing host h1 (out of band, collected 00:02:00.500)")).
				add(2*time.Minute+time.Second, lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 1, force: true")).
				add(2*time.Minute+time.Second, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(2*time.Minute+time.Second, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1"))},
		{GReportHost,
			// a VM the h2 report shows on, synced keeping the record's host h1
			runningVM().stoppedAt(2*time.Minute).
				add(3*time.Minute, lg(rep, "host:h2", "Process VM state report. host: h2, number of records in report: 1, force: false")).
				add(3*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(3*time.Minute, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h1")),
			runningVM().stoppedAt(2*time.Minute).
				add(3*time.Minute, lg(rep, "host:h2", "Process VM state report. host: h2, number of records in report: 1, force: false")).
				add(3*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerOn")).
				add(3*time.Minute, st(rep, "vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=h2"))},
		{GMissingMark,
			// D2a: marked missing 10 s after the start succeeded
			runningVM().add(time.Minute+10*time.Second, pw(rep, "vm:2", "PowerOff", "PowerReportMissing")),
			runningVM().add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing"))},
		{GMissingStoppedFirst,
			// D2b: synced to Stopped (and released) without a StopCommand
			runningVM().add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing")).
				add(4*time.Minute+time.Second, st(rep, "vm:2", "Running", "Stopped", "i-2-2-VM FollowAgentPowerOffReport host=")),
			runningVM().add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing")).
				add(4*time.Minute+time.Second, pw(rep, "vm:2", "PowerReportMissing", "PowerOff")).
				add(4*time.Minute+time.Second, st(rep, "vm:2", "Running", "Stopped", "i-2-2-VM FollowAgentPowerOffReport host="))},
		{GWithinWorkJob,
			h{}.add(0, st("api", "vm:2", "", "Stopped", "created i-2-2-VM")).add(0, st(api, "job:4", "", "IN_PROGRESS", "DeployVMCmd VirtualMachine:2")).
				add(time.Second, st(wj1, "vm:2", "Stopped", "Starting", "i-2-2-VM StartRequested host=")),
			runningVM()},
		{GOperationByOwner,
			h{}.add(0, st("api", "vm:2", "", "Stopped", "created i-2-2-VM")).add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
				add(time.Second, st(wj1, "vm:2", "Stopped", "Starting", "i-2-2-VM StartRequested host=")).
				add(time.Minute, st(wj2, "vm:2", "Starting", "Running", "i-2-2-VM OperationSucceeded host=h1")),
			runningVM()},
		{GOperationByOwner,
			// a stop's outcome ended by a thread that runs no second stop of the VM (a start's work job)
			runningVM().
				add(2*time.Minute, st(api, "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
				add(2*time.Minute, st(api, "job:8", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
				add(2*time.Minute+time.Second, st(wj2, "vm:2", "Stopping", "Stopped", "i-2-2-VM OperationSucceeded host=")),
			// two stops at once, one inline under a placeholder and one queued (explore --profile fixed
			// --scheduler pct:8 --seed 13960443919138493241, r-11-VM stopped by a start's network shutdown
			// and by deleteHost): the queued one's StopRequested on the Stopping VM writes nothing
			// (bhouse-nexthop/cloudstack@15eb2bcd VMInstanceDaoImpl.updateState, "state is same"), and
			// it ends the stop (bhouse-nexthop/cloudstack@d4da80c5 VirtualMachineManagerImpl.advanceStop:
			// the inline path under createPlaceHolderWork, the queued one through stopVmThroughJobQueue)
			runningVM().
				add(2*time.Minute, st(api, "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "job:8", "", "IN_PROGRESS", "VmWorkStop(placeholder) VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
				add(2*time.Minute+time.Second, st(wj2, "vm:2", "Stopping", "Stopped", "i-2-2-VM OperationSucceeded host="))},
		{GOperationByOwner,
			// two stops in flight, but the outcome written by a thread that is no work job (HA)
			runningVM().
				add(2*time.Minute, st(api, "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "job:8", "", "IN_PROGRESS", "VmWorkStop(placeholder) VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
				add(2*time.Minute+time.Second, st("HA-Worker-1", "vm:2", "Stopping", "Stopped", "i-2-2-VM OperationSucceeded host=")),
			runningVM()},
		{GGCFreeAndWaited,
			// the network free for 1 minute only (a GC that shuts down at first sighting)
			implementedNetwork().stoppedAt(5*time.Minute).gcShutdown(6*time.Minute, true),
			implementedNetwork().stoppedAt(5*time.Minute).gcShutdown(16*time.Minute, true)},
		{GGCFreeAndWaited,
			// NetworkGarbageCollector.reallyRun (bhouse-nexthop/cloudstack@b58b6567) samples at its
			// rounds: a network seen free while still Allocated (GC-eligible from its creation), then
			// implemented and emptied before the next round, is shut down at that round, network.gc.wait
			// after the sighting; without a sighting that long ago, 5 minutes free is too short
			implementedNetwork().stoppedAt(5*time.Minute).gcShutdown(10*time.Minute, true),
			sightedFirst(implementedNetwork(), gc).stoppedAt(5*time.Minute).gcShutdown(10*time.Minute, true)},
		{GGCFreeAndWaited,
			// each server's GC counts by its own _lastNetworkIdsToFree: another server's sighting does
			// not start this one's count
			sightedFirst(implementedNetwork(), "ms2:"+gc).stoppedAt(5*time.Minute).gcShutdown(10*time.Minute, true),
			sightedFirst(implementedNetwork(), gc).stoppedAt(5*time.Minute).gcShutdown(10*time.Minute, true)},
		{GGCFreeAndWaited,
			// the network free long enough, but a VM on it starting since before the GC took its lock
			implementedNetwork().stoppedAt(5*time.Minute).
				add(20*time.Minute, st(api, "job:11", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
				add(20*time.Minute, st(wj1, "vm:2", "Stopped", "Starting", "i-2-2-VM StartRequested host=")).
				gcShutdown(20*time.Minute+time.Second, true),
			implementedNetwork().stoppedAt(5*time.Minute).gcShutdown(20*time.Minute+time.Second, true)},
		{GOrphanCleanupStuck,
			// D1: the cleanup writes Shutdown under the implementer's lock
			h{}.add(0, st("api", "network:1", "", "Allocated", "created net1")).
				add(time.Second, lk(wj1, "1", "held")).
				add(time.Second, st(wj1, "network:1", "Allocated", "Implementing", "implementNetwork: ImplementNetwork")).
				add(20*time.Second, st(hb, "network:1", "Implementing", "Shutdown", "cleanupOrphanedNetworks: OperationFailed")),
			h{}.add(0, st("api", "network:1", "", "Allocated", "created net1")).
				add(time.Second, lk(wj1, "1", "held")).
				add(time.Second, st(wj1, "network:1", "Allocated", "Implementing", "implementNetwork: ImplementNetwork")).
				add(2*time.Second, lk(wj1, "1", "released")).
				add(25*time.Hour, lk(hb, "1", "held")).
				add(25*time.Hour, st(hb, "network:1", "Implementing", "Shutdown", "cleanupOrphanedNetworks: OperationFailed")).
				add(25*time.Hour, lk(hb, "1", "released"))},
		{GOrphanCleanupStuck,
			// a cleanup that no longer waits job.expire.minutes
			h{}.add(0, st("api", "network:1", "", "Allocated", "created net1")).
				add(time.Second, lk(wj1, "1", "held")).
				add(time.Second, st(wj1, "network:1", "Allocated", "Implementing", "implementNetwork: ImplementNetwork")).
				add(2*time.Second, lk(wj1, "1", "released")).
				add(time.Hour, lk(hb, "1", "held")).
				add(time.Hour, st(hb, "network:1", "Implementing", "Shutdown", "cleanupOrphanedNetworks: OperationFailed")),
			h{}.add(0, st("api", "network:1", "", "Allocated", "created net1")).
				add(time.Second, lk(wj1, "1", "held")).
				add(time.Second, st(wj1, "network:1", "Allocated", "Implementing", "implementNetwork: ImplementNetwork")).
				add(2*time.Second, lk(wj1, "1", "released")).
				add(25*time.Hour, lk(hb, "1", "held")).
				add(25*time.Hour, st(hb, "network:1", "Implementing", "Shutdown", "cleanupOrphanedNetworks: OperationFailed"))},
		{GShutdownAfterRouter,
			implementedNetwork().stoppedAt(5*time.Minute).gcShutdown(16*time.Minute, false),
			implementedNetwork().stoppedAt(5*time.Minute).gcShutdown(16*time.Minute, true)},
		// explore --profile fixed --scheduler random --seed 9732086268445808395: a forced host removal
		// stopped the router on paper (its domain ran on); the GC's shutdown found it Stopped
		// (VirtualRouterElement.shutdown → VirtualNetworkApplianceManagerImpl.stop → advanceStop: "VM
		// is already stopped", apache/cloudstack@ea7d322683b4ff5e08a6164256203947a3e372a8,
		// server/src/main/java/com/cloud/network/element/VirtualRouterElement.java), and a power-on
		// report moved it back to Running before the shutdown's OperationSucceeded: power sync takes
		// no lock of the network (handlePowerOnReportWithNoPendingJobsOnVM, apache/cloudstack@3156c4ba62c07c065d1aac119b0dac31242797b3,
		// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java). The
		// shutdown did stop its router; the planted bug beside it is a router a report had brought
		// back before the shutdown began, which the shutdown then left running.
		{GShutdownAfterRouter,
			implementedNetwork().stoppedAt(5*time.Minute).routerStoppedAt(5*time.Minute+time.Second).routerSynced(10*time.Minute).
				gcShutdown(16*time.Minute, false),
			implementedNetwork().stoppedAt(5*time.Minute).routerStoppedAt(5*time.Minute+time.Second).
				gcShutdownAround(16*time.Minute, func(x h) h { return x.routerSynced(16*time.Minute + 2*time.Second) })},
		// a router started again during the shutdown by a work job, not by a report: still a router
		// left running
		{GShutdownAfterRouter,
			implementedNetwork().stoppedAt(5*time.Minute).routerStoppedAt(5*time.Minute+time.Second).
				gcShutdownAround(16*time.Minute, func(x h) h {
					return x.add(16*time.Minute+time.Second, st(api, "job:13", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:3")).
						add(16*time.Minute+time.Second, st(wj2, "vm:3", "Stopped", "Starting", "r-3-VM StartRequested host=")).
						add(16*time.Minute+time.Second, st(wj2, "vm:3", "Starting", "Starting", "r-3-VM OperationRetry host=h1")).
						add(16*time.Minute+2*time.Second, st(wj2, "vm:3", "Starting", "Running", "r-3-VM OperationSucceeded host=h1")).
						add(16*time.Minute+2*time.Second, st(wj2, "job:13", "IN_PROGRESS", "SUCCEEDED", ""))
				}),
			implementedNetwork().stoppedAt(5*time.Minute).routerStoppedAt(5*time.Minute+time.Second).
				gcShutdownAround(16*time.Minute, func(x h) h { return x })},
		{GPingTimeout,
			h{}.add(0, st("AgentConnectTaskPool-1", "host:h1", "Connecting", "Up", "Ready")).
				add(time.Minute, lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 0, force: false")).
				add(2*time.Minute, lg("AgentMonitor", "host:h1", "Ping timeout for agent h1, do investigation")).
				add(2*time.Minute+time.Second, st(disc, "host:h1", "Up", "Alert", "AgentDisconnected")),
			h{}.add(0, st("AgentConnectTaskPool-1", "host:h1", "Connecting", "Up", "Ready")).
				add(time.Minute, lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 0, force: false")).
				add(4*time.Minute, lg("AgentMonitor", "host:h1", "Ping timeout for agent h1, do investigation")).
				add(4*time.Minute+time.Second, st(disc, "host:h1", "Up", "Alert", "AgentDisconnected"))},
		{GPingTimeout,
			// a row written with the status unchanged (HostDaoImpl.updateState on an investigation's
			// Ping) is no coming back Up: the ping timeout before it still counts
			h{}.add(0, st("AgentConnectTaskPool-1", "host:h1", "Connecting", "Up", "Ready")).
				add(time.Minute, lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 0, force: false")).
				add(2*time.Minute, lg("AgentMonitor", "host:h1", "Ping timeout for agent h1, do investigation")).
				add(2*time.Minute, st(disc, "host:h1", "Up", "Up", "Ping")).
				add(2*time.Minute+time.Second, st(disc, "host:h1", "Up", "Alert", "AgentDisconnected")),
			h{}.add(0, st("AgentConnectTaskPool-1", "host:h1", "Connecting", "Up", "Ready")).
				add(time.Minute, lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 0, force: false")).
				add(4*time.Minute, lg("AgentMonitor", "host:h1", "Ping timeout for agent h1, do investigation")).
				add(4*time.Minute, st(disc, "host:h1", "Up", "Up", "Ping")).
				add(4*time.Minute+time.Second, st(disc, "host:h1", "Up", "Alert", "AgentDisconnected"))},
		{GJobExpunge,
			h{}.add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).add(2*time.Hour, st(hb, "job:5", "IN_PROGRESS", "Expunged", "VmWorkStart")),
			h{}.add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).add(25*time.Hour, st(hb, "job:5", "IN_PROGRESS", "Expunged", "VmWorkStart"))},
		{GJobCancel,
			h{}.add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
				add(10*time.Minute, st(hb, "job:5", "IN_PROGRESS", "FAILED", "Job is cancelled as it has been blocking others for too long")),
			h{}.add(0, st(api, "job:5", "", "IN_PROGRESS", "VmWorkStart VirtualMachine:2")).
				add(61*time.Minute, st(hb, "job:5", "IN_PROGRESS", "FAILED", "Job is cancelled as it has been blocking others for too long"))},
		// the planted bug is the catalogue's transition-task-uses-op-wait-interval: a Starting VM handed
		// to HA after vm.op.wait.interval (2 min) instead of wait (30 min here)
		{GTransitionHandover,
			runningVM().add(2*time.Minute, st(api, "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
				add(5*time.Minute, lg(hb, "vm:2", "Scheduled HAWork[3-CheckStop-2-Stopping-Scheduled]")),
			runningVM().add(2*time.Minute, st(api, "job:7", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
				add(2*time.Minute, st(wj1, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1")).
				add(33*time.Minute, lg(hb, "vm:2", "Scheduled HAWork[3-CheckStop-2-Stopping-Scheduled]"))},
	}
	tested := map[string]bool{}
	for _, tc := range cases {
		tested[tc.guard] = true
		t.Run(tc.guard, func(t *testing.T) {
			bug := Check(testCfg, tc.bug)
			require.NotEmpty(t, bug, "the planted bug passed")
			for _, v := range bug {
				assert.Equal(t, tc.guard, v.Guard, "the bug broke another guard: %s", v)
			}
			assert.Empty(t, Check(testCfg, tc.fix), "the fix broke a guard")
		})
	}
	for _, g := range Guards {
		assert.True(t, tested[g.Name], "guard %s has no planted bug", g.Name)
	}
}

// A guard whose context the history lacks says so: the ping timeout without its settings, the
// thread guards on a history seen from outside.
func TestGuardsSayWhatTheyCannotDecide(t *testing.T) {
	c := NewChecker(Config{})
	for _, e := range runningVM().add(time.Minute+10*time.Second, pw("observer", "vm:2", "PowerOff", "PowerReportMissing")).
		add(time.Minute+10*time.Second, st("observer", "vm:2", "Running", "Stopped", "i-2-2-VM FollowAgentPowerOffReport host=")) {
		c.Add(e)
	}
	assert.Empty(t, c.Violations)
	assert.Equal(t, 1, c.Undecided[GReportThread])
	assert.Equal(t, 1, c.Undecided[GMissingMark])
	assert.Contains(t, c.Reasons[GMissingMark], "ping.interval")
}

// Every row of every machine's table has a guard, and every guard cites its Java.
func TestEveryRowHasAGuard(t *testing.T) {
	var rows []Row
	for _, r := range vm.Transitions {
		rows = append(rows, Row{VMs, string(r.From), string(r.Event), string(r.To)})
	}
	for _, r := range network.Transitions {
		rows = append(rows, Row{Networks, string(r.From), string(r.Event), string(r.To)})
	}
	for _, r := range host.Transitions {
		rows = append(rows, Row{Hosts, string(r.From), string(r.Event), string(r.To)})
	}
	require.Greater(t, len(rows), 100)
	for _, r := range rows {
		n := 0
		for _, g := range Guards {
			for a := ActorUnknown; a <= ActorCluster; a++ {
				if g.Applies(r, a) {
					n++
					break
				}
			}
		}
		assert.NotZero(t, n, "%s has no guard", r)
	}
	for _, g := range Guards {
		assert.NotEmpty(t, g.Rule, g.Name)
		assert.NotEmpty(t, g.Java, g.Name)
		assert.NotEmpty(t, g.Source, g.Name)
	}
}

func TestClassify(t *testing.T) {
	for name, want := range map[string]Actor{
		"Work-Job-Executor-4":          ActorWorkJob,
		"ms2:Work-Job-Executor-4":      ActorWorkJob,
		"Work-Job-Executor-4:ctx-1f2e": ActorWorkJob,
		"AgentTaskPool-7":              ActorReport,
		"AgentConnectTaskPool-2":       ActorReport,
		"AsyncJobMgr-Heartbeat-2":      ActorJobGC,
		"Network-Scavenger":            ActorNetworkGC,
		"main":                         ActorStartup,
		"ms2:main":                     ActorStartup,
		"api":                          ActorAPI,
		"observer":                     ActorUnknown,
		"client-3":                     ActorUnknown,
	} {
		assert.Equal(t, want, Classify(name), name)
	}
}

// A report handler asks about pending work and reads the power state once, after its report began:
// a stop requested meanwhile, or a power state changed by another host's report meanwhile, does not
// make its transition wrong (the Java has the same window).
func TestReportHandlersJudgedAsOfTheirCheck(t *testing.T) {
	report := lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 0, force: false")
	x := runningVM().add(4*time.Minute, report).
		add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing")).
		add(4*time.Minute+time.Second, st(api, "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
		add(4*time.Minute+time.Second, pw("AgentTaskPool-9", "vm:2", "PowerReportMissing", "PowerOn")).
		add(4*time.Minute+2*time.Second, st(rep, "vm:2", "Running", "Stopped", "i-2-2-VM FollowAgentPowerOffReport host="))
	assert.Empty(t, Check(testCfg, x))
	// the same stop requested before the report began: pending when the handler asked
	y := runningVM().add(4*time.Minute, st(api, "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
		add(4*time.Minute, report).
		add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing")).
		add(4*time.Minute+time.Second, pw(rep, "vm:2", "PowerReportMissing", "PowerOff")).
		add(4*time.Minute+2*time.Second, st(rep, "vm:2", "Running", "Stopped", "i-2-2-VM FollowAgentPowerOffReport host="))
	vs := Check(testCfg, y)
	require.Len(t, vs, 1)
	assert.Equal(t, GReportNoPendingWork, vs[0].Guard)
}

// docs/guards.md lists every guard.
func TestDocsListEveryGuard(t *testing.T) {
	b, err := os.ReadFile("../../docs/guards.md")
	require.NoError(t, err)
	for _, g := range Guards {
		assert.Contains(t, string(b), "`"+g.Name+"`", "docs/guards.md")
	}
}

// Every guard names the situation a run must reach for it to judge anything.
func TestEveryGuardNamesItsSituation(t *testing.T) {
	for _, g := range Guards {
		assert.NotEmpty(t, g.Situation, g.Name)
	}
}

// processMissingVmReport reads the host's VMs once, after its report began, and judges each on that
// read: a VM whose failed stop moved it back to Running after the read is marked missing all the
// same (the Java's window; explore --profile fixed --seed 9, case 568, h2 reconnecting after a power
// loss while vm2's StopCommand timed out). A state change before the report began still counts (D2a).
func TestMissingMarkJudgedAsOfTheReport(t *testing.T) {
	report := lg(rep, "host:h1", "Process VM state report. host: h1, number of records in report: 0, force: false")
	stopping := runningVM().add(time.Minute, st(api, "job:9", "", "IN_PROGRESS", "VmWorkStop VirtualMachine:2")).
		add(time.Minute+time.Second, st(wj2, "vm:2", "Running", "Stopping", "i-2-2-VM StopRequested host=h1"))
	x := stopping.add(4*time.Minute, report).
		add(4*time.Minute, st(wj2, "vm:2", "Stopping", "Running", "i-2-2-VM OperationFailed host=h1")).
		add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing"))
	assert.Empty(t, Check(testCfg, x))
	// the stop failed before the report began: its check saw the change
	y := stopping.add(4*time.Minute, st(wj2, "vm:2", "Stopping", "Running", "i-2-2-VM OperationFailed host=h1")).
		add(4*time.Minute, report).
		add(4*time.Minute, pw(rep, "vm:2", "PowerOff", "PowerReportMissing"))
	vs := Check(testCfg, y)
	require.Len(t, vs, 1)
	assert.Equal(t, GMissingMark, vs[0].Guard)
}

// A history of any shape (a saved file, a log's extraction) is judged without a panic.
func FuzzChecker(f *testing.F) {
	f.Add("vm:2", "Stopped", "Running", "i-2-2-VM FollowAgentPowerOnReport host=", "AgentTaskPool-1", "state", int64(5))
	f.Add("network:1", "Implementing", "Shutdown", "cleanupOrphanedNetworks: OperationFailed", "AsyncJobMgr-Heartbeat-2", "state", int64(0))
	f.Add("host:h1", "", "", "Ping from Routing host h1 (out of band, collected 99:99)", "AgentTaskPool-1", "log", int64(-3))
	f.Add("job:1", "IN_PROGRESS", "Expunged", "", "main", "state", int64(1))
	f.Add("vm:", "Up", "", "host=", "ms2:", "power", int64(2))
	f.Fuzz(func(t *testing.T, obj, from, to, detail, actor, kind string, sec int64) {
		c := NewChecker(testCfg)
		for _, e := range runningVM().stoppedAt(2 * time.Minute) {
			c.Add(e)
		}
		for i := range 3 {
			c.Add(history.Event{Seq: int64(100 + i), Time: t0.Add(time.Duration(sec+int64(i)) * time.Second), Actor: actor, Kind: kind, Object: obj, From: from, To: to, Detail: detail})
		}
	})
}

// processMissingVmReport's own graceful period runs from the VM's power-state update time (its
// "Detected missing VM" line says it), not only from its last state change, and only an
// out-of-band ping's report is forced past it: processHostVmStateReport, the StartupCommand's
// report, passes force false (apache/cloudstack@bed947b5
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachinePowerStateSyncImpl.java,
// processMissingVmReport and processHostVmStateReport). The mutants powersync-missing-without-graceful-period
// and powersync-connect-report-forced mark a VM missing at a reconnect, whose reset of the host's
// power tracking has just set its update time.
func TestMissingMarkWaitsForThePowerUpdate(t *testing.T) {
	const conn = "AgentConnectTaskPool-5"
	detected := func(actor, at string) history.Event {
		return lg(actor, "vm:2", "Detected missing VM. host: h1, vm id: 2(i-2-2-VM), power state: PowerReportMissing, last state update: "+at)
	}
	report := func(actor, force string) history.Event {
		return lg(actor, "host:h1", "Process VM state report. host: h1, number of records in report: 0"+force)
	}
	for _, tc := range []struct {
		name        string
		actor       string
		force       string // the report line's tail
		lastUpdate  string
		want        string // the guard's verdict: "violated", "allowed", "undecidable"
		wantMessage string
	}{
		{"a reconnect's report 10 s after the tracking reset", conn, ", force: false", "00:09:50.000", "violated", "10s after its last power-state update"},
		{"a reconnect's report said forced", conn, ", force: true", "00:09:50.000", "violated", "not forced"},
		{"CloudStack's own date format", conn, "", "2026-10-29T00:09:50+0000", "violated", "10s after"},
		{"an out-of-band ping's report is forced", rep, ", force: true", "00:09:50.000", "allowed", ""},
		{"a ping's report that does not say", rep, "", "00:09:50.000", "undecidable", "forced"},
		{"past the graceful period", conn, ", force: false", "00:07:50.000", "allowed", ""},
		{"a time of day before midnight", conn, ", force: false", "23:59:55.000", "allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := runningVM().
				add(10*time.Minute, report(tc.actor, tc.force)).
				add(10*time.Minute, detected(tc.actor, tc.lastUpdate)).
				add(10*time.Minute, pw(tc.actor, "vm:2", "PowerOn", "PowerReportMissing"))
			c := NewChecker(testCfg)
			for _, e := range x {
				c.Add(e)
			}
			switch tc.want {
			case "violated":
				require.Len(t, c.Violations, 1)
				assert.Equal(t, GMissingMark, c.Violations[0].Guard)
				assert.Contains(t, c.Violations[0].Reason, tc.wantMessage)
			case "allowed":
				assert.Empty(t, c.Violations)
				assert.Zero(t, c.Undecided[GMissingMark])
			case "undecidable":
				assert.Empty(t, c.Violations)
				assert.Equal(t, 1, c.Undecided[GMissingMark])
				assert.Contains(t, c.Reasons[GMissingMark], tc.wantMessage)
			}
		})
	}
}
