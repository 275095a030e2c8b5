package guard

import (
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Where the Java was read: the 4.22 branch (a fork that tracks it) and upstream's job manager.
const (
	src422 = "bhouse-nexthop/cloudstack@d4da80c5"
	srcJob = "apache/cloudstack@04b49bc3"
	vmmi   = "engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java"
	psync  = "engine/orchestration/src/main/java/com/cloud/vm/VirtualMachinePowerStateSyncImpl.java"
	netor  = "engine/orchestration/src/main/java/org/apache/cloudstack/engine/orchestration/NetworkOrchestrator.java"
	agmgr  = "engine/orchestration/src/main/java/com/cloud/agent/manager/AgentManagerImpl.java"
	jobmgr = "framework/jobs/src/main/java/org/apache/cloudstack/framework/jobs/impl/AsyncJobManagerImpl.java"
	vmfsm  = "api/src/main/java/com/cloud/vm/VirtualMachine.java"
)

// Guard names.
const (
	GInStateMachine      = "in-the-state-machine"
	GReportThread        = "power-report-thread"
	GReportNoPendingWork = "power-report-no-pending-work"
	GReportFollowsPower  = "power-report-follows-power-state"
	GMissingMark         = "missing-mark-after-graceful"
	GReportNotStale      = "power-on-report-not-stale"
	GReportHost          = "power-on-sync-takes-reporting-host"
	GMissingStoppedFirst = "missing-synced-after-stop"
	GWithinWorkJob       = "start-stop-within-work-job"
	GOperationByOwner    = "operation-by-its-attempt"
	GGCFreeAndWaited     = "network-gc-free-and-waited"
	GOrphanCleanupStuck  = "orphan-cleanup-stuck-and-unlocked"
	GShutdownAfterRouter = "network-shutdown-after-router-stop"
	GPingTimeout         = "ping-timeout-after-silence"
	GJobExpunge          = "job-expunge-after-expire"
	GJobCancel           = "job-cancel-after-threshold"
	GTransitionHandover  = "transition-task-after-wait"
)

func vmRows(events ...vm.Event) func(Row, Actor) bool {
	return func(r Row, _ Actor) bool {
		return r.Machine == VMs && slices.Contains(events, vm.Event(r.Event))
	}
}

var powerReportRows = vmRows(vm.FollowAgentPowerOnReport, vm.FollowAgentPowerOffReport)

// Guards is every guard, the state machine's own first.
var Guards = []Guard{
	{
		Name:      GInStateMachine,
		Situation: "a state changed",
		Rule:      "a state change follows a row of its machine's table, unless it is one of the writes CloudStack makes around the machine (setState, marked Direct)",
		Java:      "StateMachine2.transitTo (NoTransitionException); VirtualMachine.State.s_fsm, Network.State.s_fsm, Status.s_fsm",
		Source:    src422 + " " + vmfsm,
		Applies:   func(r Row, _ Actor) bool { return r.Machine == VMs || r.Machine == Networks || r.Machine == Hosts },
		Check:     checkInStateMachine,
	},
	{
		Name:      GReportThread,
		Situation: "a power report moved a VM",
		Rule:      "a VM follows a power report only on the thread that processes a host's report (a ping or a StartupCommand)",
		Java:      "VirtualMachinePowerStateSyncImpl.processHostVmStatePingReport → VirtualMachineManagerImpl.handlePowerStateReport",
		Source:    src422 + " " + psync,
		Applies:   powerReportRows,
		Check:     checkReportThread,
	},
	{
		Name:      GReportNoPendingWork,
		Situation: "a power report moved a VM",
		Rule:      "a VM follows a power report only while no VM work job is pending on it (the report is postponed otherwise)",
		Java:      "VirtualMachineManagerImpl.handlePowerStateReport (listPendingWorkJobs, hasPendingHaWork)",
		Source:    src422 + " " + vmmi,
		Applies:   powerReportRows,
		Check:     checkReportNoPendingWork,
	},
	{
		Name:      GReportFollowsPower,
		Situation: "a power report moved a VM",
		Rule:      "FollowAgentPowerOnReport only for a VM whose power state is PowerOn; FollowAgentPowerOffReport only for PowerOff or PowerReportMissing",
		Java:      "VirtualMachineManagerImpl.handlePowerStateReport (switch on getPowerState), handlePowerOffReportWithNoPendingJobsOnVM",
		Source:    src422 + " " + vmmi,
		Applies:   powerReportRows,
		Check:     checkReportFollowsPower,
	},
	{
		Name:      GReportNotStale,
		Situation: "an out-of-band power-on report (which says when it was collected) moved a Stopped VM to Running",
		Rule:      "a Stopped VM follows a power-on report only if the report was collected after the VM's last state change",
		Java:      "VirtualMachinePowerStateSyncImpl.processHostVmStateReport: updatePowerState with the report's own time as its wisdom era (the C3 fix; 4.22 passes the processing time)",
		Source:    src422 + " " + psync,
		Applies: func(r Row, _ Actor) bool {
			return r.Machine == VMs && r.Event == string(vm.FollowAgentPowerOnReport) && r.From == string(vm.Stopped)
		},
		Check: checkReportNotStale,
	},
	{
		Name:      GReportHost,
		Situation: "a power-on report moved a Stopped or Running VM to Running (on its host)",
		Rule:      "a VM synced by a power-on report takes the host that reported it on (its power host), not the record's",
		Java:      "VirtualMachineManagerImpl.handlePowerOnReportWithNoPendingJobsOnVM (stateTransitTo(vm, FollowAgentPowerOnReport, vm.getPowerHostId()))",
		Source:    src422 + " " + vmmi,
		// the report path only: the stall scan follows a transitional VM to whatever host its last
		// report named, which may be long before and silent in a history (no power-state change)
		Applies: func(r Row, _ Actor) bool {
			return r.Machine == VMs && r.Event == string(vm.FollowAgentPowerOnReport) && (r.From == string(vm.Stopped) || r.From == string(vm.Running))
		},
		Check: checkReportHost,
	},
	{
		Name:      GMissingMark,
		Situation: "a VM was marked missing",
		Rule:      "a VM absent from its host's report is marked PowerReportMissing only if its state had not changed within the graceful period (2 × ping.interval), and, unless the report is forced (a ping's outOfBand flag; a StartupCommand's report never is), its power state had not been updated within it either",
		Java:      "VirtualMachinePowerStateSyncImpl.processMissingVmReport (hasRecentStateChange, PR #14207; the power_state_update_time period and force); processHostVmStateReport passes force false",
		Source:    "apache/cloudstack PR #14207, " + psync + "; apache/cloudstack@bed947b5 " + psync,
		Applies:   func(r Row, _ Actor) bool { return r.Machine == Power && r.To == string(vm.PowerReportMissing) },
		Check:     checkMissingMark,
	},
	{
		Name:      GMissingStoppedFirst,
		Situation: "a missing report moved a user VM to Stopped",
		Rule:      "a user VM reported missing is synced to Stopped only after a StopCommand that checks the host first succeeded (its power state goes PowerOff on the handler's thread)",
		Java:      "VirtualMachineManagerImpl.handlePowerOffReportWithNoPendingJobsOnVM (the D2 fix: sendStop with checkBeforeCleanup before releaseVmResources, apache/cloudstack#14206)",
		Source:    src422 + " " + vmmi,
		Applies:   vmRows(vm.FollowAgentPowerOffReport),
		Check:     checkMissingStoppedFirst,
	},
	{
		Name:      GWithinWorkJob,
		Situation: "a start or stop began",
		Rule:      "a start or stop moves its VM only inside a VM work job (VmWorkStart/VmWorkStop, or the placeholder job of an inline start or stop)",
		Java:      "VirtualMachineManagerImpl.advanceStart/advanceStop (VmWorkJobHandlerProxy, createPlaceHolderWork)",
		Source:    src422 + " " + vmmi,
		Applies:   vmRows(vm.StartRequested, vm.StopRequested),
		Check:     checkWithinWorkJob,
	},
	{
		Name:      GOperationByOwner,
		Situation: "a start, stop or migration ended",
		Rule:      "a VM in Starting, Stopping or Migrating leaves it through its operation's outcome only on the thread of the attempt that put it there (or the cleanup of a dead server's jobs, at its restart or by a peer, which fails them; or, for Stopping, a work job while a second stop of the VM is in progress: its StopRequested on the Stopping VM writes nothing)",
		Java:      "VirtualMachineManagerImpl.orchestrateStart/orchestrateStop/orchestrateMigrate (changeState on the attempt's own row), cleanupLeftOverJobs",
		Source:    src422 + " " + vmmi,
		Applies: func(r Row, _ Actor) bool {
			if r.Machine != VMs || (r.From != string(vm.Starting) && r.From != string(vm.Stopping) && r.From != string(vm.Migrating)) {
				return false
			}
			switch vm.Event(r.Event) {
			case vm.OperationSucceeded, vm.OperationFailed, vm.OperationRetry, vm.OperationFailedToError:
				return true
			}
			return false
		},
		Check: checkOperationByOwner,
	},
	{
		Name:      GGCFreeAndWaited,
		Situation: "the network GC shut a network down",
		Rule:      "the network GC shuts a network down only once it has seen it free (no user VM but Stopped, Destroyed, Error or Expunging) network.gc.wait ago, and free again under the network's lock (seen free: since it was last implemented, or at the GC round whose \"free for the first time\" line started the GC's count, whatever the network did between its rounds)",
		Java:      "NetworkOrchestrator.NetworkGarbageCollector.reallyRun (_lastNetworkIdsToFree, NetworkGcWait), isNetworkReadyForGc, shutdownNetwork",
		Source:    src422 + " " + netor,
		Applies: func(r Row, a Actor) bool {
			return r.Machine == Networks && r.From == string(network.Implemented) && r.To == string(network.Shutdown) && a == ActorNetworkGC
		},
		Check: checkGCFreeAndWaited,
	},
	{
		Name:      GOrphanCleanupStuck,
		Situation: "the orphan cleanup moved a network out of Implementing",
		Rule:      "the job GC's orphaned-network cleanup moves a network out of Implementing only after job.expire.minutes in that state, holding the network's lock, with no job pending on it",
		Java:      "AsyncJobManagerImpl GC task → NetworkOrchestrator.cleanupOrphanedNetworks (PR #12409 and its fix)",
		Source:    srcJob + " " + jobmgr + "; " + netor,
		Applies: func(r Row, a Actor) bool {
			return r.Machine == Networks && r.From == string(network.Implementing) && r.To == string(network.Shutdown) && a == ActorJobGC
		},
		Check: checkOrphanCleanup,
	},
	{
		Name:      GShutdownAfterRouter,
		Situation: "a network with a router finished its shutdown",
		Rule:      "a network shut down returns to Allocated only once its elements are shut down: its router is not left running (one a power-on report moved from Stopped to Running after the shutdown began was stopped, or found stopped, by it: power sync takes no lock of the network)",
		Java:      "NetworkOrchestrator.shutdownNetwork (shutdownNetworkElementsAndResources must succeed before OperationSucceeded); VirtualRouterElement.shutdown → advanceStop (\"VM is already stopped\"); handlePowerOnReportWithNoPendingJobsOnVM",
		Source:    src422 + " " + netor,
		Applies: func(r Row, _ Actor) bool {
			return r.Machine == Networks && r.From == string(network.Shutdown) && r.Event == string(network.OperationSucceeded)
		},
		Check: checkShutdownAfterRouter,
	},
	{
		Name:      GPingTimeout,
		Situation: "a host was disconnected after a ping timeout",
		Rule:      "a host whose agent went quiet is disconnected for a ping timeout only after ping.interval × ping.timeout without a ping",
		Java:      "AgentManagerImpl.MonitorTask (findAgentsBehindOnPing: last_ping < now − PingTimeout) → handleDisconnectWithInvestigation",
		Source:    src422 + " " + agmgr,
		Applies: func(r Row, a Actor) bool {
			if r.Machine != Hosts || a != ActorDisconnect {
				return false
			}
			switch host.Event(r.Event) {
			case host.PingTimeout, host.AgentDisconnected, host.HostDown:
				return true
			}
			return false
		},
		Check: checkPingTimeout,
	},
	{
		Name:      GJobExpunge,
		Situation: "the job GC expunged an unfinished job",
		Rule:      "the job GC expunges an unfinished job only once it is job.expire.minutes old",
		Java:      "AsyncJobManagerImpl.getGCTask → getExpiredUnfinishedJobs(cutTime(JobExpireMinutes))",
		Source:    srcJob + " " + jobmgr,
		Applies:   func(r Row, _ Actor) bool { return r.Machine == Jobs && r.To == "Expunged" },
		Check:     checkJobExpunge,
	},
	{
		Name:      GJobCancel,
		Situation: "the job GC cancelled a blocking job",
		Rule:      "the job GC cancels a job for blocking its queue only once it has run job.cancel.threshold.minutes",
		Java:      "AsyncJobManagerImpl.getGCTask → getBlockedQueueItems(JobCancelThresholdMinutes)",
		Source:    srcJob + " " + jobmgr,
		Applies: func(r Row, a Actor) bool {
			return r.Machine == Jobs && r.To == "FAILED" && a == ActorJobGC
		},
		Check: checkJobCancel,
	},
	{
		Name:      GTransitionHandover,
		Situation: "TransitionTask handed a VM in transition to HA",
		Rule:      "TransitionTask hands a Starting VM to HA (a restart with investigation) or a Stopping one to a CheckStop only once its row has not been updated for `wait`",
		Java:      "VirtualMachineManagerImpl.TransitionTask (findVMInTransition(now - AgentManager.Wait, Starting, Stopping) → scheduleRestart(vm, true) / scheduleStop(vm, hostId, CheckStop))",
		Source:    src422 + " " + vmmi,
		Applies: func(r Row, a Actor) bool {
			return r.Machine == HA && r.Event == "TransitionTask" && a == ActorJobGC
		},
		Check: checkTransitionHandover,
	},
}

func checkInStateMachine(c *Checker, e *history.Event, r Row) Outcome {
	if e.Direct || r.Event == "setState" {
		return allowed()
	}
	if !knownEvent(r) {
		return undecidable("%q is no event of the %s machine (a log's own wording)", r.Event, r.Machine)
	}
	ok := false
	switch r.Machine {
	case VMs:
		to, found := vm.Next(vm.State(r.From), vm.Event(r.Event))
		ok = found && string(to) == r.To
	case Networks:
		to, found := network.Next(network.State(r.From), network.Event(r.Event))
		ok = found && string(to) == r.To
	case Hosts:
		to, found := host.Next(host.Status(r.From), host.Event(r.Event))
		ok = found && string(to) == r.To
	}
	if !ok {
		return violated(nil, "%s has no row (%s, %s) to %s", r.Machine, r.From, r.Event, r.To)
	}
	return allowed()
}

func checkReportThread(c *Checker, e *history.Event, r Row) Outcome {
	switch a := Classify(e.Actor); a {
	case ActorReport:
		return allowed()
	case ActorUnknown:
		return undecidable("the thread %q is not one CloudStack names", e.Actor)
	default:
		return violated(nil, "%s followed a power report on %s, which processes no host report", e.Object, e.Actor)
	}
}

func checkReportNoPendingWork(c *Checker, e *history.Event, r Row) Outcome {
	if len(c.jobs) == 0 || c.cfg.FromLog {
		return undecidable("the history does not show every VM work job with its VM")
	}
	// the handler asks once, after its report began: a job created since may be pending at the
	// transition (the Java's window too); one created before was pending when it asked
	since := e.Seq
	if r, ok := c.reportLine[e.Actor]; ok {
		since = r.Seq
	}
	if j, ok := c.pendingWork(e.Object, since); ok {
		ev := []history.Event{j}
		if r, ok := c.reportLine[e.Actor]; ok {
			ev = append(ev, r)
		}
		return violated(ev, "%s followed a power report while its work job %s (%s), pending since before the report's handling began, was pending", e.Object, j.Object, j.Detail)
	}
	return allowed()
}

func checkReportFollowsPower(c *Checker, e *history.Event, r Row) Outcome {
	v := c.vm(e.Object)
	if v.power == "" {
		return undecidable("the history shows neither the VM's creation nor its power state")
	}
	// the handler reads the power state once, after its report began: any state the VM had since
	since := e.Seq
	if rl, ok := c.reportLine[e.Actor]; ok {
		since = rl.Seq
	}
	for _, p := range v.powerSince(since) {
		if r.Event == string(vm.FollowAgentPowerOnReport) && p == string(vm.PowerOn) ||
			r.Event == string(vm.FollowAgentPowerOffReport) && (p == string(vm.PowerOff) || p == string(vm.PowerReportMissing)) {
			return allowed()
		}
	}
	var ev []history.Event
	if v.powerEv.Seq != 0 {
		ev = append(ev, v.powerEv)
	}
	return violated(ev, "%s moved on %s while its power state was %s", e.Object, r.Event, v.power)
}

func checkReportNotStale(c *Checker, e *history.Event, r Row) Outcome {
	at, ok := c.collected[e.Actor]
	if !ok {
		return undecidable("the report's line does not say when it was collected (only out-of-band pings do)")
	}
	// the handler compared the report with the VM's row as it read it, after its report began
	last, ok := c.vm(e.Object).stateBefore(c.readAt(e.Actor, e))
	// the line gives milliseconds: a report collected within the same millisecond is not judged stale
	if ok && !at.Add(time.Millisecond).After(last.Time) {
		return violated([]history.Event{last, c.pingLine[e.Actor]}, "%s followed a power-on report collected at %s, before its last state change (%s at %s)", e.Object, fmtTime(at), last.To, fmtTime(last.Time))
	}
	return allowed()
}

func checkReportHost(c *Checker, e *history.Event, r Row) Outcome {
	i := strings.Index(e.Detail, "host=")
	rl, ok := c.reportLine[e.Actor]
	if i < 0 || !ok {
		return undecidable("the line does not say the VM's new host, or which host's report its thread handles")
	}
	to := "host:"
	if f := strings.Fields(e.Detail[i+len("host="):]); len(f) > 0 {
		to += f[0]
	}
	// the power host the handler read: its own report's host, or one whose report was handled since
	// its report began (the column is written by each report)
	if to == rl.Object {
		return allowed()
	}
	for _, h := range c.hosts {
		if h.lastReport.Seq > rl.Seq && h.lastReport.Object == to {
			return allowed()
		}
	}
	return violated([]history.Event{rl}, "%s was synced to Running on %s, but the report that showed it on came from %s", e.Object, to, rl.Object)
}

func checkMissingMark(c *Checker, e *history.Event, r Row) Outcome {
	if c.cfg.PingInterval <= 0 {
		return undecidable("ping.interval is not known")
	}
	// the handler read the VM's row (its update time) after its report began: a change since then
	// is not what it judged
	last, ok := c.vm(e.Object).stateBefore(c.readAt(e.Actor, e))
	if !ok {
		return undecidable("the history does not show %s's last state change before its report", e.Object)
	}
	graceful := 2 * c.cfg.PingInterval
	if since := e.Time.Sub(last.Time); since <= graceful {
		return violated([]history.Event{last}, "%s was marked missing %s after its last state change (%s), within the graceful period of %s", e.Object, since, last.To, graceful)
	}
	// processMissingVmReport's own period: since the VM's power-state update time, as its "Detected
	// missing VM" line gives it, unless the report is forced. The mark comes after the handler read
	// the clock, so a mark within the period means the handler's reading was within it too.
	v := c.vm(e.Object)
	if !v.lastUpdate.IsZero() && v.detected.Actor == e.Actor && v.detected.Seq >= c.readAt(e.Actor, e) {
		if since := e.Time.Sub(v.lastUpdate); since <= graceful {
			forced, known := c.reportForced(e.Actor)
			switch {
			case !known:
				return undecidable("%s was marked missing %s after its last power-state update, within the graceful period, and the history does not say whether its report was forced", e.Object, since)
			case !forced:
				return violated([]history.Event{v.detected}, "%s was marked missing %s after its last power-state update (%s, as the handler logged it), within the graceful period of %s, on a report that was not forced", e.Object, since, v.lastUpdate.Format("15:04:05.000"), graceful)
			}
		}
	}
	return allowed()
}

func checkMissingStoppedFirst(c *Checker, e *history.Event, r Row) Outcome {
	if Classify(e.Actor) == ActorUnknown {
		return undecidable("the thread %q is not one CloudStack names", e.Actor)
	}
	if c.cfg.FromLog {
		return undecidable("a log does not show the power-state write of the handler's StopCommand")
	}
	v := c.vm(e.Object)
	if v.router {
		return inapplicable() // a router's power column is not written by the stop
	}
	if v.power == string(vm.PowerOff) && v.powerEv.From == string(vm.PowerReportMissing) && v.powerEv.Actor == e.Actor {
		return allowed() // the handler's own stop succeeded
	}
	if v.power != string(vm.PowerReportMissing) {
		return inapplicable() // not a missing VM's sync
	}
	return violated([]history.Event{v.powerEv}, "%s was synced to Stopped on a missing report with no StopCommand that succeeded (its power state is still PowerReportMissing)", e.Object)
}

func checkWithinWorkJob(c *Checker, e *history.Event, r Row) Outcome {
	if len(c.jobs) == 0 || c.cfg.FromLog {
		return undecidable("the history does not show every VM work job with its VM")
	}
	if _, ok := c.pendingWork(e.Object, 0); ok {
		return allowed()
	}
	return violated(nil, "%s moved on %s with no VM work job in progress on it, so nothing postpones its power reports", e.Object, r.Event)
}

func checkOperationByOwner(c *Checker, e *history.Event, r Row) Outcome {
	v := c.vm(e.Object)
	switch Classify(e.Actor) {
	case ActorStartup, ActorCluster:
		if vm.Event(r.Event) == vm.OperationFailed {
			// cleanupLeftOverJobs: a restarted server, or a peer that saw it leave
			// (onManagementNodeLeft), fails what the dead server's attempts left
			return allowed()
		}
	case ActorUnknown:
		return undecidable("the thread %q is not one CloudStack names", e.Actor)
	}
	if v.owner == "" {
		return undecidable("the history does not show which attempt put %s in %s", e.Object, r.From)
	}
	if v.owner == e.Actor {
		return allowed()
	}
	if r.From == string(vm.Stopping) && Classify(e.Actor) == ActorWorkJob && c.stopsInProgress(e.Object) >= 2 {
		// A second stop of a VM in Stopping: advanceStop's StopRequested (Stopping -> Stopping, a row of
		// s_fsm) is a write VMInstanceDaoImpl.updateState skips ("state is same, don't need to update":
		// same state and host, true returned), so the history has no line of that attempt taking the VM,
		// and either attempt's outcome may end it. Two stops run at once when one is inline in a work
		// job (advanceStop from a VM work job: orchestrateStop under a placeholder, which
		// VmWorkJobDao.persist keeps out of the VM's work queue) and the other is queued (a stop from an
		// API job: stopVmThroughJobQueue), e.g. a router stopped by a start's network shutdown and by
		// deleteHost (explore --profile fixed --scheduler pct:8 --seed 13960443919138493241).
		return allowed()
	}
	return violated([]history.Event{v.stateEv}, "%s left %s on %s by %s, not by %s whose attempt put it there", e.Object, r.From, r.Event, e.Actor, v.owner)
}

func checkGCFreeAndWaited(c *Checker, e *history.Event, r Row) Outcome {
	if c.cfg.GCWait <= 0 {
		return undecidable("network.gc.wait is not known")
	}
	n := c.net(e.Object)
	freeSinceImplemented := !n.freeImplemented.IsZero() && e.Time.Sub(n.freeImplemented) >= c.cfg.GCWait
	// reallyRun samples at its rounds only: _lastNetworkIdsToFree keeps a network seen free at one round
	// while it is free at each later round, whatever it did in between, so a network seen free (even
	// Allocated: it is GC-eligible from its creation) and then implemented and emptied again before
	// the next round is shut down at that round, network.gc.wait after the sighting
	// (each server's GC by its own count: the sighting of the thread that shuts it down)
	seen := n.gcSighted[e.Actor]
	sightedFree := !seen.at.IsZero() && seen.free && e.Time.Sub(seen.at) >= c.cfg.GCWait
	if !freeSinceImplemented && !sightedFree {
		return violated([]history.Event{n.implementing}, "the network GC shut %s down though it had not been free network.gc.wait (%s) before (free since: %s; seen free by this GC: %s)", e.Object, c.cfg.GCWait, fmtTime(n.freeImplemented), fmtTime(seen.at))
	}
	if !n.busySince.IsZero() {
		// the GC's last look is under the lock: a user that became active after it took the lock
		// (by the history's order: same-instant lines are common in the simulator) may be unseen
		lockAt := e.Seq
		if n.holder == e.Actor {
			lockAt = n.lockEv.Seq
		}
		if n.busySeq < lockAt {
			var ev []history.Event
			for _, u := range n.users {
				if uv := c.vm(u); active(uv.state) {
					ev = append(ev, uv.stateEv)
				}
			}
			return violated(ev, "the network GC shut %s down while a user VM on it was active since %s, before the GC's last look", e.Object, fmtTime(n.busySince))
		}
	}
	return allowed()
}

func checkOrphanCleanup(c *Checker, e *history.Event, r Row) Outcome {
	n := c.net(e.Object)
	if c.locksSeen && n.holder != e.Actor {
		if n.holder != "" {
			return violated([]history.Event{n.lockEv}, "the orphan cleanup moved %s out of Implementing while %s held its lock (it was being implemented)", e.Object, n.holder)
		}
		return violated(nil, "the orphan cleanup moved %s out of Implementing without holding its lock", e.Object)
	}
	if j, ok := c.pendingNetworkJob(e.Object); ok {
		return violated([]history.Event{j}, "the orphan cleanup moved %s out of Implementing while its job %s was pending", e.Object, j.Object)
	}
	if c.cfg.JobExpire <= 0 {
		return undecidable("job.expire.minutes is not known")
	}
	if n.implementing.Seq == 0 {
		return undecidable("the history does not show when %s entered Implementing", e.Object)
	}
	if age := e.Time.Sub(n.implementing.Time); age < c.cfg.JobExpire {
		return violated([]history.Event{n.implementing}, "the orphan cleanup moved %s out of Implementing after %s in it, before job.expire.minutes (%s)", e.Object, age, c.cfg.JobExpire)
	}
	return allowed()
}

func checkShutdownAfterRouter(c *Checker, e *history.Event, r Row) Outcome {
	n := c.net(e.Object)
	if n.router == "" || n.shutdownBy != e.Actor {
		return inapplicable() // no router, or not the end of a shutdown (an implementation's last write)
	}
	rv := c.vm(n.router)
	if active(rv.state) && rv.state != string(vm.Stopping) {
		// A router a power-on report moved from an inactive state to Running after the shutdown
		// began was stopped, or found stopped, by the shutdown: power sync takes no lock of the
		// network (handlePowerOnReportWithNoPendingJobsOnVM), and a domain a forced stop left running
		// comes back that way. A report before the shutdown, or a start, is a router left running.
		if ev := rv.stateEv; ev.Seq > n.shutdownSeq && Classify(ev.Actor) == ActorReport &&
			vmEvent(&ev) == string(vm.FollowAgentPowerOnReport) && !active(ev.From) {
			return allowed()
		}
		return violated([]history.Event{rv.stateEv}, "%s went back to Allocated while its router %s was %s", e.Object, n.router, rv.state)
	}
	return allowed()
}

func checkPingTimeout(c *Checker, e *history.Event, r Row) Outcome {
	h := c.host(e.Object)
	if h.pingTimeout.Seq == 0 || h.pingTimeout.Seq < h.upSeq {
		return inapplicable() // not a ping timeout: the agent's connection closed or it asked to leave
	}
	if c.cfg.PingTimeout <= 0 {
		return undecidable("ping.interval and ping.timeout are not known")
	}
	if h.quietFrom.Seq == 0 {
		return undecidable("the history shows no report of %s's pings before it was found behind", e.Object)
	}
	// a report is processed a little after its ping arrived: a tenth of the timeout of slack
	quiet := h.pingTimeout.Time.Sub(h.quietFrom.Time)
	if quiet < c.cfg.PingTimeout-c.cfg.PingTimeout/10 {
		return violated([]history.Event{h.quietFrom, h.pingTimeout}, "%s was found behind on ping %s after its last report, before ping.interval × ping.timeout (%s)", e.Object, quiet, c.cfg.PingTimeout)
	}
	return allowed()
}

func checkJobExpunge(c *Checker, e *history.Event, r Row) Outcome {
	j := c.jobs[e.Object]
	if j == nil || j.created.Seq == 0 {
		return undecidable("the history does not show when %s was created", e.Object)
	}
	if c.cfg.JobExpire <= 0 {
		return undecidable("job.expire.minutes is not known")
	}
	if age := e.Time.Sub(j.created.Time); age < c.cfg.JobExpire {
		return violated([]history.Event{j.created}, "%s (%s) was expunged unfinished %s after its creation, before job.expire.minutes (%s)", e.Object, j.cmd, age, c.cfg.JobExpire)
	}
	return allowed()
}

func checkJobCancel(c *Checker, e *history.Event, r Row) Outcome {
	if !strings.Contains(e.Detail, "blocking others") {
		return inapplicable()
	}
	j := c.jobs[e.Object]
	if j == nil || j.created.Seq == 0 {
		return undecidable("the history does not show when %s was created", e.Object)
	}
	if c.cfg.JobCancel <= 0 {
		return undecidable("job.cancel.threshold.minutes is not known")
	}
	if age := e.Time.Sub(j.created.Time); age < c.cfg.JobCancel {
		return violated([]history.Event{j.created}, "%s (%s) was cancelled for blocking its queue %s after its creation, before job.cancel.threshold.minutes (%s)", e.Object, j.cmd, age, c.cfg.JobCancel)
	}
	return allowed()
}

func checkTransitionHandover(c *Checker, e *history.Event, r Row) Outcome {
	if r.From != "Starting" && r.From != "Stopping" {
		return inapplicable() // not TransitionTask's: it hands over only VMs in these two states
	}
	v := c.vms[e.Object]
	if v == nil || v.stateEv.Seq == 0 {
		return undecidable("the history does not show when %s last changed state", e.Object)
	}
	if c.cfg.Wait <= 0 {
		return undecidable("wait is not known")
	}
	if quiet := e.Time.Sub(v.stateEv.Time); quiet < c.cfg.Wait {
		return violated([]history.Event{v.stateEv}, "%s (%s) was handed to HA (%s) %s after its last update, before wait (%s)", e.Object, r.From, r.To, quiet, c.cfg.Wait)
	}
	return allowed()
}

// knownEvent says whether a row's event is one of its machine's (a log may name a transition its own way).
func knownEvent(r Row) bool {
	switch r.Machine {
	case VMs:
		return slices.Contains(vm.Events(), vm.Event(r.Event))
	case Networks:
		return slices.Contains(network.Events(), network.Event(r.Event))
	case Hosts:
		return slices.Contains(host.Events(), host.Event(r.Event))
	}
	return false
}
