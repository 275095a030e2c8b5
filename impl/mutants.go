package impl

// The mutation catalogue: plausible one-line regressions of the fixed code paths — what a CloudStack
// developer could merge while refactoring the fixes of D1, D2, D3, C1, C2 and C6 — used to measure the
// detectors and the random programs (`csconform mutants run`). It was written before the detectors
// it measures, so that they are judged by it rather than shaped by it.
//
// A mutant lives in the code as `if mutated(MutX) { … }` at its point. In an ordinary build
// mutantsBuilt is the constant false and the compiler drops every such branch; only a binary built
// with `-tags mutants` can switch one on (SetMutant), and at most one at a time.

// Mutant names one regression of the catalogue.
type Mutant string

// The catalogue, by path.
const (
	// power-state sync (the D2 fixes, PR #14207)
	MutRecentChangeOnlyUnforced  Mutant = "powersync-recent-change-only-unforced"
	MutGracefulOnePing           Mutant = "powersync-graceful-one-ping"
	MutMissingStopUnchecked      Mutant = "powersync-missing-stop-unchecked"
	MutMissingReleaseAfterRefuse Mutant = "powersync-missing-release-after-refused-stop"
	MutPendingOnlyForPowerOn     Mutant = "powersync-pending-only-for-power-on"
	MutStopUnmanagedOnRecordHost Mutant = "powersync-stop-unmanaged-on-record-host"
	MutPowerOnSyncKeepsHost      Mutant = "powersync-power-on-sync-keeps-record-host"
	// start and its cleanup (C1)
	MutStartTimeoutIsFailure    Mutant = "start-timeout-is-failure"
	MutCleanupReleasesRunning   Mutant = "start-cleanup-releases-after-failed-stop"
	MutRouterTimeoutStopsRecord Mutant = "router-start-timeout-stops-record"
	// management-server restart (C2)
	MutRestartStopsUnreported Mutant = "restart-stops-starting-vm-not-reported-on"
	// stop, destroy, expunge (D3, D2c)
	MutForcedReleaseOnAlert     Mutant = "stop-forced-release-on-alert"
	MutForcedReleaseUnlessUp    Mutant = "stop-forced-release-unless-up"
	MutStopUnreachableStopping  Mutant = "stop-unreachable-leaves-stopping"
	MutDestroyMarksVolumesFirst Mutant = "destroy-marks-volumes-before-stop"
	MutExpungeChecksOnlyError   Mutant = "expunge-asks-host-only-for-error"
	MutExpungeVolumeFailureOK   Mutant = "expunge-volume-failure-is-success"
	// networks (D1 and the network GC)
	MutOrphanCleanupNoReread     Mutant = "orphan-cleanup-no-reread-under-lock"
	MutShutdownWhileImplementing Mutant = "shutdown-network-while-implementing"
	MutGCIgnoresStartingVMs      Mutant = "network-gc-ignores-starting-vms"
	MutGCFirstSighting           Mutant = "network-gc-first-sighting"
	MutRouterStopFailureStopped  Mutant = "router-stop-failure-is-stopped"
	MutReleaseNicKeepsCount      Mutant = "release-nic-keeps-active-count"
	MutImplementFailureStays     Mutant = "implement-failure-leaves-implementing"
	// the agent's order of a VM's commands (C6)
	MutAgentOrderBeforeCreate Mutant = "agent-order-ends-before-create"
	MutAgentOrderInTask       Mutant = "agent-order-taken-by-the-task"

	// Round two, written before the transition guards (issue 33) and in its three classes, so that the
	// guards are measured by them. (1) When or why a transition happens changes and no invariant breaks:
	MutMissingNoGraceful   Mutant = "powersync-missing-without-graceful-period"
	MutConnectReportForced Mutant = "powersync-connect-report-forced"
	MutMonitorOnePing      Mutant = "ping-timeout-after-one-interval"
	MutOrphanCleanupNoAge  Mutant = "orphan-cleanup-ignores-implementing-age"
	MutJobExpungeAtCancel  Mutant = "job-gc-expunges-at-cancel-threshold"
	// (2) only programs that draw the timing keys or run for hours get there:
	MutGCWaitIsInterval     Mutant = "network-gc-waits-interval-not-wait"
	MutTransitionTaskOpWait Mutant = "transition-task-uses-op-wait-interval"
	// (3) routers, outside the ghost-record and outage checks:
	MutRouterPowerOnNotPostponed Mutant = "powersync-router-power-on-not-postponed"
	MutRouterStartNoPlaceholder  Mutant = "router-start-without-placeholder-job"
	MutShutdownIgnoresRouterStop Mutant = "shutdown-network-ignores-router-stop-failure"

	// Round three, written before the HA detectors (issue 45: the "HA's promise" survivors of the
	// mechanical samples, in the class's own terms, not copies of the survivors' edits): HA restarts
	// an HA-enabled VM it was asked to, or says why not.
	MutHaNoRecaptureAfterFailure Mutant = "ha-restart-failure-keeps-old-capture"
	MutHaGiveUpEarly             Mutant = "ha-gives-up-after-two-tries"
	MutHaLeftServerItemsKept     Mutant = "ha-left-server-items-not-released"
	MutHaCancelledNotFinished    Mutant = "ha-cancelled-item-keeps-holding"

	// Round four, written before the hypervisor's refusal was a fault programs draw (issue 45: the
	// start-failure survivors of the mechanical samples, in the class's terms): a start the host's
	// hypervisor refuses, its agent alive, ends Stopped with its resources released, or on another host.
	MutAgentStartErrorIgnored     Mutant = "agent-start-error-answers-success"
	MutFailedAnswerNoCleanup      Mutant = "start-failed-answer-skips-cleanup"
	MutFailedAnswerLeavesStarting Mutant = "start-failed-answers-leave-starting"
	MutRouterFailedStartStarting  Mutant = "router-failed-start-stays-starting"

	// Round five, written before any detector of their class (issue 45: the "what an operation
	// promised at its end" survivors of the mechanical samples, in the class's terms): an API call that
	// answered success left what it promised, and a background duty of the job GC, due by its
	// configured deadline, did not happen.
	MutDeleteNetworkKeepsRow  Mutant = "delete-network-keeps-row"
	MutExpungeKeepsRow        Mutant = "expunge-keeps-vm-row"
	MutJobGCKeepsExpiredJobs  Mutant = "job-gc-keeps-expired-unfinished-jobs"
	MutJobGCKeepsBlockedItems Mutant = "job-gc-keeps-blocked-items"

	// Round six, written before any detector of their class (issue 45: the "HA's promise" survivors of
	// the seed-8 sample, in the class's terms): an HA-enabled VM the server takes out of service on its
	// own — its domain reported off, its host Down or removed, a restart's cleanup of its start — is
	// handed to HA, not left Stopped.
	MutHaRestartStopsWithoutItem Mutant = "ha-restart-cleanup-stops-without-item"
	MutHaPowerOffNoRestart       Mutant = "ha-power-off-synced-without-restart"
	MutHaHostDownStopsHaVMs      Mutant = "ha-host-down-stops-ha-vms"
	MutHaHostRemoveStopsHaVMs    Mutant = "ha-host-remove-stops-ha-vms"
)

// MutantInfo says what a mutant does, in CloudStack's terms.
type MutantInfo struct {
	ID      Mutant
	Method  string // the method it breaks
	Summary string
}

// Mutants is the catalogue.
var Mutants = []MutantInfo{
	{MutRecentChangeOnlyUnforced, "processMissingVmReport", "the recent-state-change guard (hasRecentStateChange) is applied to periodic reports only, not to out-of-band ones"},
	{MutGracefulOnePing, "processMissingVmReport", "the graceful period for a missing VM is one ping interval instead of two"},
	{MutMissingStopUnchecked, "handlePowerOffReportWithNoPendingJobsOnVM", "the StopCommand for a missing VM is sent without checkBeforeCleanup, so it stops a domain that runs"},
	{MutMissingReleaseAfterRefuse, "handlePowerOffReportWithNoPendingJobsOnVM", "a missing VM's NICs and volumes are released even when the host refused to stop it"},
	{MutPendingOnlyForPowerOn, "handlePowerStateReport", "pending work jobs postpone power-on reports only: a missing or power-off report is acted on during a start or stop"},
	{MutStopUnmanagedOnRecordHost, "stopUnmanagedInstanceOnReportingHost", "a powered-on Destroyed/Expunging instance is stopped on the record's host instead of the reporting host"},
	{MutPowerOnSyncKeepsHost, "handlePowerOnReportWithNoPendingJobsOnVM", "a VM synced to Running by a power-on report keeps the record's host instead of taking the reporting host"},
	{MutStartTimeoutIsFailure, "orchestrateStart", "a StartCommand that timed out counts as a failed start: the VM goes to Stopped and its resources are released while the domain may run"},
	{MutCleanupReleasesRunning, "cleanup", "a failed start's cleanup of a Running/Stopping VM releases its resources even when its stop did not reach the host"},
	{MutRouterTimeoutStopsRecord, "startRouter", "a router start that timed out moves the router's record to Stopped while it may boot on the host"},
	{MutRestartStopsUnreported, "cleanupLeftOverJobs", "after a restart, a Starting VM is left for power sync only if a report already said PowerOn; others go to Stopped without asking the host"},
	{MutForcedReleaseOnAlert, "forcedReleaseAllowed", "a forced stop may release the resources of a VM whose host is in Alert (not only Down/Removed)"},
	{MutForcedReleaseUnlessUp, "forcedReleaseAllowed", "a forced stop may release the resources of a VM whose host is anything but Up"},
	{MutStopUnreachableStopping, "orchestrateStop", "a stop that cannot reach the host leaves the VM in Stopping instead of moving it back to Running"},
	{MutDestroyMarksVolumesFirst, "destroy", "destroy marks the volumes Destroy before its stop, so a failed stop leaves them Destroy under a running domain"},
	{MutExpungeChecksOnlyError, "advanceExpunge", "expunge asks the last host to stop the instance only for a VM in Error, not for a Destroyed one"},
	{MutExpungeVolumeFailureOK, "advanceExpunge", "a volume whose delete failed on the host is marked Expunged"},
	{MutOrphanCleanupNoReread, "cleanupOrphanedNetworks", "the orphaned-network cleanup decides on the row it read before taking the lock, without re-reading it under the lock"},
	{MutShutdownWhileImplementing, "shutdownNetwork", "shutdownNetwork accepts a network in Implementing"},
	{MutGCIgnoresStartingVMs, "isNetworkReadyForGc", "the network GC counts only Running VMs as users of a network, not Starting or Stopping ones"},
	{MutGCFirstSighting, "networkGarbageCollector", "the network GC shuts a network down the first time it sees it free, without network.gc.wait"},
	{MutRouterStopFailureStopped, "stopRouter", "a router whose StopCommand failed is recorded Stopped"},
	{MutReleaseNicKeepsCount, "releaseNic", "releasing a NIC does not decrement the network's active NIC count, so the network is never collected"},
	{MutImplementFailureStays, "implementNetwork", "a failed implementation releases the lock but leaves the network in Implementing"},
	{MutAgentOrderBeforeCreate, "Agent.execute", "a StartCommand ends its part of the order when it begins, not once its domain exists: a stop behind it no longer waits for the domain"},
	{MutMissingNoGraceful, "processMissingVmReport", "an unforced report declares a VM missing the first time it is absent, without waiting two ping intervals since its last power-state update"},
	{MutConnectReportForced, "connectAgent", "the report in a (re)connecting host's StartupCommand is handled as forced (out of band), as if it were a fresh report"},
	{MutMonitorOnePing, "MonitorTask", "an agent is behind on ping after one ping interval instead of ping.interval × ping.timeout: Up → Alert after one missed ping"},
	{MutOrphanCleanupNoAge, "cleanupOrphanedNetworks", "the fixed orphan cleanup no longer waits job.expire.minutes: a network Implementing with its lock free and no job is shut down at the GC's next tick"},
	{MutJobExpungeAtCancel, "expungeExpiredUnfinishedJobs", "unfinished jobs are expunged after job.cancel.threshold.minutes instead of job.expire.minutes, so a long start stops counting as pending work an hour early"},
	{MutGCWaitIsInterval, "networkGarbageCollector", "the network GC waits network.gc.interval, not network.gc.wait, between seeing a network free and shutting it down (the same at the defaults)"},
	{MutTransitionTaskOpWait, "TransitionTask", "a VM in Starting or Stopping is handed to HA after vm.op.wait.interval instead of `wait` without an update"},
	{MutRouterPowerOnNotPostponed, "handlePowerStateReport", "a router's power-on report is not postponed by its pending work job: a router being stopped is synced back to Running"},
	{MutRouterStartNoPlaceholder, "startRouter", "the inline router start runs without its placeholder work job, so power sync and the stall scan act on the router while it starts"},
	{MutShutdownIgnoresRouterStop, "shutdownNetwork", "shutdownNetwork goes on to Allocated when its router's stop failed, leaving the router running on a network that is no longer implemented"},
	{MutHaNoRecaptureAfterFailure, "HighAvailabilityManagerImpl.restart", "a restart whose start failed is rescheduled with the VM's state and update count of before the try, so the next try finds the VM changed by HA's own failed start and drops it: the HA-enabled VM stays Stopped"},
	{MutHaGiveUpEarly, "HighAvailabilityManagerImpl.processWork", "a work item is given up after two tries instead of max.retries (5)"},
	{MutHaLeftServerItemsKept, "HighAvailabilityManagerImpl.onManagementNodeLeft", "the HA items a server that left had taken are not released (releaseWorkItems), so no other server works them until it comes back"},
	{MutHaCancelledNotFinished, "HighAvailabilityManagerImpl.checkAndCancelWorkIfNeeded", "an item cancelled because its host is Up again is left taken and counts as pending work for ever: the VM's power reports are postponed from then on"},
	{MutAgentStartErrorIgnored, "LibvirtStartCommandWrapper.execute", "a StartCommand whose domain the hypervisor could not create answers success: the VM is recorded Running with no domain"},
	{MutFailedAnswerNoCleanup, "orchestrateStart", "a failed StartAnswer goes on to the next attempt without the attempt's cleanup: no StopCommand to the host that refused, its NICs and volumes left as prepared there"},
	{MutFailedAnswerLeavesStarting, "orchestrateStart", "a start whose every attempt the hypervisor refused returns its error without the outer finally's OperationFailed: the VM stays Starting"},
	{MutRouterFailedStartStarting, "startRouter", "a router whose StartAnswer says failed keeps its Starting record, as only a timed-out start should"},
	{MutDeleteNetworkKeepsRow, "NetworkOrchestrator.destroyNetwork", "deleteNetwork answers success with the network's row left in Destroy, not removed: listNetworks still lists it"},
	{MutExpungeKeepsRow, "VirtualMachineManagerImpl.advanceExpunge", "expunge answers success with the VM's row left Expunging, not removed"},
	{MutJobGCKeepsExpiredJobs, "AsyncJobManagerImpl.expungeExpiredUnfinishedJobs", "the GC task no longer expunges unfinished jobs older than job.expire.minutes: a job whose thread is stuck stays in progress, and counts as pending work, for ever"},
	{MutJobGCKeepsBlockedItems, "AsyncJobManagerImpl.cancelBlockedQueueItems", "the GC task no longer cancels a queue item that has been in process for longer than job.cancel.threshold.minutes: the VM's later work waits behind it for ever"},
	{MutHaRestartStopsWithoutItem, "VirtualMachineManagerImpl.cancelWorkItems", "a restarted server's cleanup of a start its previous incarnation left half done force-stops the VM and marks the row Done without scheduling its HA restart: an HA-enabled VM a restart caught starting stays Stopped"},
	{MutHaPowerOffNoRestart, "VirtualMachineManagerImpl.handlePowerOffReportWithNoPendingJobsOnVM", "an HA-enabled Running VM whose domain is reported off or missing is synced to Stopped as any other, not handed to HA for a restart (ha.vm.restart.hostup on)"},
	{MutHaHostDownStopsHaVMs, "HighAvailabilityManagerImpl.scheduleRestartForVmsOnHost", "a host found Down has its HA-enabled VMs force-stopped instead of scheduled for an HA restart: they stay Stopped"},
	{MutHaHostRemoveStopsHaVMs, "ResourceManagerImpl.doDeleteHost", "a forced deleteHost stops the HA-enabled VMs on the host as it stops the others, instead of scheduling their HA restart"},
	{MutAgentOrderInTask, "Agent.processRequest", "the order is taken by each command's task on the pool instead of by the reader, so a stop that runs before the start it arrived behind does not wait for it"},
}

// activeMutant is the one mutant switched on (SetMutant, mutants builds only).
var activeMutant Mutant

// mutated says whether m is the mutant switched on; constant false outside a mutants build.
func mutated(m Mutant) bool { return mutantsBuilt && activeMutant == m }

// MutantsBuilt says whether this binary can switch mutants on (built with -tags mutants).
func MutantsBuilt() bool { return mutantsBuilt }
