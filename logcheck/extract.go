package logcheck

import (
	"strings"

	"github.com/csconform/csconform/model/history"
)

// Fact kinds: what a log line says, finer than history's event kinds; the coverage report counts them.
const (
	KVMTransition   = "vm-transition"      // VM state transitted/transited from A to B
	KNetTransition  = "network-transition" // a network's state written (transition or orphan cleanup)
	KHostTransition = "host-transition"
	KVolTransition  = "volume-transition"
	KOtherState     = "other-transition"
	KHostEvent      = "host-investigation" // Investigating why host …, PingInvestigator, agent up/down
	KPowerReport    = "power-report"       // Process VM state report (one per host report)
	KPowerUpdate    = "power-update"       // VM state report is updated … power state: X
	KUnknownDomain  = "unmanaged-domain"   // Unable to find matched VM in CloudStack DB … PowerOn
	KMissing        = "missing-vm"         // Detected missing VM
	KGrace          = "graceful-period"    // has (not) passed graceful period
	KPowerOutcome   = "power-outcome"      // at S and we received a P report / sync-ed / postpone
	KCommand        = "agent-command"      // Seq h-n: Sending / Received, Sending StartCommand for …
	KTimeout        = "command-timeout"    // Timed out on Seq, Operation timed out
	KJob            = "job"                // Executing / Complete async job, job state
	KLock           = "network-lock"       // Lock is acquired / released for network
	KRelease        = "resource-release"   // NIC / resources released for a VM
	KIP             = "ip"                 // a guest IP allocated or released
	KNetDecision    = "network-decision"   // implement / shutdown / GC decisions
	KOrphan         = "orphan-cleanup"     // orphaned network / unmanaged instance cleanup
	KMSStart        = "ms-start"           // a management server started
	KHA             = "ha-work"            // the HA worker: HAWork[…] processed, a VM restarted by HA, work rescheduled
	KPowerState     = "power-state"        // a host's report of one VM: VM state report. host: H, vm id: V, power state: P
	KStartFail      = "start-failure"      // a start that failed or was rolled back: Unable to orchestrate start, the guru did not like the answers, rethrown exceptions
	KVMStep         = "vm-step"            // a step of a VM's work job: allocating, starting again on the last host, Run VM work job … for VM N
	KRouter         = "router"             // a virtual router's start and configuration (rules resent, userdata applied, DomR version)
	KStorage        = "storage"            // volume and storage-pool work (no check reads it)
	KNoState        = "no-state"           // a line of a class that logs no state a check reads: planners, capacity and resource counts, API servlet, schedulers, alerts
)

// noStateLoggers are the classes whose lines carry nothing a check reads (after the kinds above are
// matched by their wording: a CapacityManagerImpl transition line is a transition). The logger is
// matched by its last component, so that c.c.d.DeploymentPlanningManagerImpl and
// cloud.deploy.DeploymentPlanningManagerImpl are one.
var noStateLoggers = map[string]string{
	"DeploymentPlanningManagerImpl": KNoState, "FirstFitPlanner": KNoState, "FirstFitAllocator": KNoState,
	"FirstFitRoutingAllocator": KNoState, "RandomAllocator": KNoState, "UserConcentratedPodPlanner": KNoState,
	"CapacityManagerImpl": KNoState, "ResourceLimitManagerImpl": KNoState, "ApiServlet": KNoState, "ApiServer": KNoState,
	"ApiRateLimitServiceImpl": KNoState, "VMSchedulerImpl": KNoState, "ClusterDrsServiceImpl": KNoState,
	"PrometheusExporterServerImpl": KNoState, "AlertManagerImpl": KNoState, "CSExceptionErrorCode": KNoState,
	"SnapshotSchedulerImpl": KNoState, "StatsCollector": KNoState, "AccountManagerImpl": KNoState,
	"NetworkModelImpl": KNoState, "ConsoleProxyManagerImpl": KNoState, "SecondaryStorageManagerImpl": KNoState,
	"PremiumSecondaryStorageManagerImpl": KNoState, "ClusterManagerImpl": KNoState, "ClusteredAgentManagerImpl": KNoState,
	"DynamicRoleBasedAPIAccessChecker": KNoState, "TransactionLegacy": KNoState, "Transaction": KNoState,
	"SecurityGroupManagerImpl": KNoState, "SecurityGroupManagerImpl2": KNoState,
	// the agent's own lines, on a host that runs both (journald)
	"LibvirtComputingResource": KNoState, "LibvirtKvmAgentHook": KNoState, "Script": KNoState,
	"VolumeOrchestrator": KStorage, "VolumeServiceImpl": KStorage, "VolumeApiServiceImpl": KStorage, "VolumeDaoImpl": KStorage,
	"StorageManagerImpl": KStorage, "SnapshotManagerImpl": KStorage, "StorageSubsystemCommandHandlerBase": KStorage,
	"TemplateServiceImpl": KStorage, "StorageSystemDataMotionStrategy": KStorage,
	// the async job framework: every line is a job's lifecycle
	"AsyncJobManagerImpl": KJob, "AsyncJobMonitor": KJob, "AsyncJobExecutionContext": KJob, "ApiAsyncJobDispatcher": KJob,
	"VmWorkJobDispatcher": KJob, "VmWorkJobHandlerProxy": KJob,
}

// loggerClass is a logger's last component without an inner-class suffix: AsyncJobManagerImpl$5 →
// AsyncJobManagerImpl.
func loggerClass(l string) string {
	if i := strings.LastIndexByte(l, '.'); i >= 0 {
		l = l[i+1:]
	}
	if i := strings.IndexByte(l, '$'); i >= 0 {
		l = l[:i]
	}
	return l
}

// orphanWrite marks the write a "Successfully transitioned orphaned network" line stands for.
const orphanWrite = "orphaned network cleanup"

// Fact is one thing a log entry says, as a history event with the kind it came from.
type Fact struct {
	Kind string
	history.Event
	Host    string // the host a report or transition names
	Name    string // the instance name, when the line gives one
	Network string // the network an IP line names
}

// Extractor turns entries into facts. It remembers, per thread, the last VM named (the old
// transition line does not name its VM) — state bounded by the number of threads.
type Extractor struct {
	lastVM  map[string]string
	lastJob map[string]string // thread -> the work job its context last named
}

// NewExtractor returns an extractor.
func NewExtractor() *Extractor {
	return &Extractor{lastVM: map[string]string{}, lastJob: map[string]string{}}
}

// workJob notes, once per thread and pair, that a thread runs the work job M of API job N (its
// context says job-N/job-M): the job facts the log carries on every line of a work job.
func (x *Extractor) workJob(e *Entry, actor string) (Fact, bool) {
	i := strings.Index(e.Context, "job-")
	if i < 0 {
		return Fact{}, false
	}
	api, work := jobRef(e.Context[i:])
	if work == "" || x.lastJob[actor] == work {
		return Fact{}, false
	}
	x.lastJob[actor] = work
	return Fact{Kind: KJob, Event: history.Event{Time: e.Time, Actor: actor, Level: e.Level, Kind: history.State,
		Object: "job:" + work, To: "IN_PROGRESS", Detail: "work job of job-" + api + " on " + actor}}, true
}

// Extract returns the facts of e; malformed is set when e looks like a known kind but does not
// parse (reported with its file:line), and known says whether any kind matched.
func (x *Extractor) Extract(e *Entry, actor string) (facts []Fact, known bool, malformed string) {
	if f, ok := x.workJob(e, actor); ok {
		defer func() {
			if malformed == "" {
				facts, known = append(facts, f), true
			}
		}()
	}
	m := strings.TrimPrefix(e.Msg, "... ") // a copy that elided the thread: "[c.c.a.t.Request] ... Seq 77361-8: Sending"
	base := history.Event{Time: e.Time, Actor: actor, Level: e.Level}
	add := func(kind, hkind, obj, from, to, detail string) {
		ev := base
		ev.Kind, ev.Object, ev.From, ev.To, ev.Detail = hkind, obj, from, to, detail
		facts = append(facts, Fact{Kind: kind, Event: ev})
	}
	vm := func() (string, string) {
		k, n := vmRef(m)
		if k != "" {
			x.lastVM[actor] = k
		}
		return k, n
	}
	switch {
	case strings.Contains(m, "state transited from [") || strings.Contains(m, "state transitted from :"):
		f, bad := x.transition(e, actor, m)
		if bad != "" {
			return nil, true, bad
		}
		f.Event.Time, f.Event.Actor, f.Event.Level = e.Time, actor, e.Level
		return []Fact{f}, true, ""
	case strings.HasPrefix(m, "Lock is acquired for network") || strings.HasPrefix(m, "Lock is released for network"):
		n := networkRef(m)
		if n == "" {
			return nil, true, "lock line names no network"
		}
		to := "held"
		if strings.HasPrefix(m, "Lock is released") {
			to = "released"
		}
		add(KLock, history.Lock, "networks"+strings.TrimPrefix(n, "network:"), "", to, m)
	case strings.HasPrefix(m, "Unable to acquire lock for the network"):
		add(KLock, history.Log, networkRef(m), "", "", m)
	case strings.HasPrefix(m, "Successfully transitioned orphaned network"):
		n := networkRef(m)
		if n == "" {
			return nil, true, "orphan cleanup line names no network"
		}
		add(KOrphan, history.Log, n, "", "", m)
		add(KNetTransition, history.State, n, "Implementing", "Shutdown", orphanWrite)
	case strings.HasPrefix(m, "Found orphaned network"):
		add(KOrphan, history.Log, networkRef(m), "", "", m)
	case strings.HasPrefix(m, "Stopped unmanaged instance"):
		k, n := vm()
		add(KOrphan, history.Log, k, "", "", m)
		facts[len(facts)-1].Name = n
	case strings.HasPrefix(m, "Process VM state report"):
		h := hostRef(m)
		if h == "" {
			return nil, true, "power report names no host"
		}
		add(KPowerReport, history.Log, h, "", "", m)
		facts[len(facts)-1].Host = h
	case strings.HasPrefix(m, "VM state report is updated"):
		k, n := vm()
		ps := strings.TrimSuffix(strings.TrimSpace(afterLast(m, "power state: ")), ".")
		if k == "" || ps == "" {
			return nil, true, "power update without VM or power state"
		}
		add(KPowerUpdate, history.Power, k, "", ps, m)
		facts[len(facts)-1].Host, facts[len(facts)-1].Name = hostRef(m), n
	case strings.HasPrefix(m, "Unable to find matched VM in CloudStack DB"):
		n := jsonField(m, "name")
		if n == "" {
			return nil, true, "unmanaged-domain line without a name"
		}
		n = strings.TrimSuffix(n, ",")
		key := "vm:" + n
		if id := vmIDFromName(n); id != "" {
			key = "vm:" + id
		}
		add(KUnknownDomain, history.Power, key, "", powerWord(m), m)
		facts[len(facts)-1].Name = n
	case strings.HasPrefix(m, "Detected missing VM but power state is outdated"):
		k, _ := vm()
		add(KPowerOutcome, history.Log, k, "", "", m)
	case strings.HasPrefix(m, "Detected missing VM"):
		k, n := vm()
		if k == "" {
			return nil, true, "missing-VM line names no VM"
		}
		add(KMissing, history.Power, k, "", "PowerReportMissing", m)
		facts[len(facts)-1].Host, facts[len(facts)-1].Name = hostRef(m), n
	case strings.Contains(m, "graceful period"):
		k, _ := vm()
		add(KGrace, history.Log, k, "", "", m)
	case strings.Contains(m, "report while there is no pending jobs on it") || strings.Contains(m, "is sync-ed") ||
		strings.HasPrefix(m, "There is pending job or HA tasks working on the VM") || strings.Contains(m, "report is outdated") ||
		strings.HasPrefix(m, "Detected missing VM but power state is outdated"):
		k, _ := vm()
		add(KPowerOutcome, history.Log, k, "", "", m)
	case strings.HasPrefix(m, "Seq ") || strings.Contains(m, "Timed out on Seq") || strings.HasPrefix(m, "Operation timed out"):
		return x.command(e, actor, m, base), true, ""
	case strings.HasPrefix(m, "Sending StartCommand") || strings.HasPrefix(m, "Sending StopCommand"):
		k, n := vm()
		add(KCommand, history.Log, k, "", "sent", m)
		facts[len(facts)-1].Host, facts[len(facts)-1].Name = hostRef(m), n
	case strings.HasPrefix(m, "Complete async job-") || strings.HasPrefix(m, "Executing AsyncJob") ||
		strings.HasPrefix(m, "Add job-") || strings.HasPrefix(m, "Sync job-") || strings.HasPrefix(m, "Done executing"):
		j, _ := jobRef(m)
		if j == "" {
			j = jsonField(m, "id")
		}
		to := ""
		if s := jsonField(m, "jobStatus"); s != "" {
			to = s
		}
		add(KJob, history.State, "job:"+j, "", to, m)
	case strings.HasPrefix(m, "Investigating why host") || strings.HasPrefix(m, "PingInvestigator") ||
		strings.HasPrefix(m, "Agent is disconnected but the host is still up") || strings.HasPrefix(m, "Agent is determined to be up") ||
		strings.Contains(m, "is down. Starting HA") || strings.HasPrefix(m, "Ping timeout for agent") || strings.Contains(m, "state cannot be determined"):
		h := hostRef(m)
		add(KHostEvent, history.Log, h, "", "", m)
		facts[len(facts)-1].Host = h
	case strings.HasPrefix(m, "Guest IP address "):
		// the reference's rendering: Guest IP address A changed from [free] to [vm:N]
		f, t := between(m, "from [", "]"), between(m, "to [", "]")
		a := strings.Fields(m)
		if len(a) < 4 || f == "" || t == "" {
			return nil, true, "IP line without address or holders"
		}
		add(KIP, history.IP, "ip:"+a[3], f, t, m)
		facts[len(facts)-1].Network = networkRef(between(m, " of ", " changed"))
	case strings.HasPrefix(m, "The nic ") && strings.Contains(m, "was released") ||
		strings.Contains(m, "Proceeding to release resource held") || strings.HasPrefix(m, "Successfully cleaned up resources for the VM") ||
		strings.HasPrefix(m, "Cleaning Network for Instance") || strings.HasPrefix(m, "Releasing ip address") ||
		strings.Contains(m, "continue with release because it's a force stop") || strings.Contains(m, forcedCleanupLine):
		k, n := vm()
		add(KRelease, history.Log, k, "", "", m)
		facts[len(facts)-1].Name = n
	case strings.Contains(m, "is not ready for GC") || strings.Contains(m, "to be free for the first time") ||
		strings.Contains(m, "is still free but it's not time to shutdown") || strings.Contains(m, "is shutdown successfully") ||
		strings.HasPrefix(m, "Sending network shutdown") || strings.HasPrefix(m, "Asking ") && strings.Contains(m, "to implement") ||
		strings.HasPrefix(m, "Changing active number of nics") || strings.HasPrefix(m, "Unable to shutdown network") ||
		strings.Contains(m, "is already implemented") || strings.HasPrefix(m, "Cleaning up because we're unable to implement"):
		add(KNetDecision, history.Log, networkRef(m), "", "", m)
	case strings.HasPrefix(m, "Stopping router") || strings.HasPrefix(m, "Unable to stop router"):
		k, _ := vm()
		add(KNetDecision, history.Log, k, "", "", m)
	case strings.HasPrefix(m, "Management server ") && strings.HasSuffix(m, " started"):
		add(KMSStart, history.Log, "", "", "", m)
	case strings.HasPrefix(m, "VM state report. ") || strings.HasPrefix(m, "VM power state does not change"):
		// the host's report of one VM, before the update line (if the state changed) of the same report:
		// an observation, which the checks leave to the update lines so as not to count one report twice
		k, n := vm()
		add(KPowerState, history.Log, k, "", strings.TrimSuffix(strings.TrimSpace(afterLast(m, "power state: ")), "."), m)
		facts[len(facts)-1].Host, facts[len(facts)-1].Name = hostRef(m), n
	case strings.HasPrefix(m, "Run missing VM report") || strings.HasPrefix(m, "Done with process of VM state report") ||
		strings.HasPrefix(m, "Process host VM state report"):
		add(KPowerReport, history.Log, hostRef(m), "", "", m)
	case strings.HasPrefix(m, "Detected out-of-band stop of a HA enabled VM") || strings.Contains(m, "is in Running state, but power state is") ||
		strings.Contains(m, "unexpectedly went to Stopped state") || strings.HasPrefix(m, "Detected out of band VM migration"):
		k, _ := vm()
		add(KPowerOutcome, history.Log, k, "", "", m)
	case strings.Contains(m, "HAWork[") || strings.HasPrefix(m, "HA on VM") || strings.HasPrefix(m, "HA is now restarting") ||
		strings.HasPrefix(m, "RESTART with HA WORK") || strings.HasPrefix(m, "Checking Host HA inspection") ||
		strings.HasPrefix(m, "Notifying HA Mgr") || strings.HasPrefix(m, "Schedule vm for HA"):
		k := haWorkVM(m)
		if k == "" {
			k, _ = vm()
		}
		add(KHA, history.Log, k, "", "", m)
	case strings.Contains(m, "is disconnecting with event") || strings.HasPrefix(m, "Deregistering link for") ||
		strings.HasPrefix(m, "Sending Disconnect to listener") || strings.Contains(m, "disconnected past the wait time") ||
		strings.Contains(m, "determined to be disconnected but it hasn't passed the wait time") ||
		strings.HasPrefix(m, "The next status of agent") || strings.HasPrefix(m, "Received agent disconnect event for host"):
		// AgentManagerImpl's disconnect handling
		h := hostRef(m)
		if id := digits(afterFirst(m, "Deregistering link for ")); id != "" {
			h = "host:" + id
		}
		add(KHostEvent, history.Log, h, "", "", m)
		facts[len(facts)-1].Host = h
	case strings.HasPrefix(m, "checking if agent (") || strings.HasPrefix(m, "The agent from host") ||
		strings.Contains(m, "Investigator unable to determine") || strings.Contains(m, "Investigator found ") ||
		strings.HasPrefix(m, "Transitioned host HA state") || strings.HasPrefix(m, "HA: Agent"):
		h := hostRef(m)
		if id := digits(afterLast(m, "host id:")); id != "" {
			h = "host:" + id // Transitioned host HA state from:A to:B due to event:E for the host id:38
		}
		add(KHostEvent, history.Log, h, "", "", m)
		facts[len(facts)-1].Host = h
	case strings.HasPrefix(m, "Unable to orchestrate start") || strings.HasPrefix(m, "Unable to start VM") || strings.HasPrefix(m, "Unable to start  VM") ||
		strings.HasPrefix(m, "Unable to start a VM") || strings.HasPrefix(m, "The guru did not like the answers") ||
		strings.HasPrefix(m, "Invocation exception, caused by") || strings.HasPrefix(m, "Rethrow exception") ||
		strings.HasPrefix(m, "Exception while trying to start") || strings.HasPrefix(m, "Unable to start secondary storage VM") ||
		strings.HasPrefix(m, "Unable to contact resource") || strings.Contains(m, "failed while starting virtual router") ||
		strings.HasPrefix(m, "GetDomRVersionCmd failed") || strings.HasPrefix(m, "Rolling back the state"):
		k, n := vm()
		add(KStartFail, history.Log, k, "", "", m)
		facts[len(facts)-1].Name = n
	case strings.HasPrefix(m, "Run VM work job: ") || strings.HasPrefix(m, "Execute VM work job: ") || strings.HasPrefix(m, "Done with run of VM work job: "):
		// the work job names its VM: later lines of the thread (an old transition line) are about it
		k := ""
		if id := digits(afterLast(m, "for VM ")); id != "" {
			k = "vm:" + id
		} else if id := jsonField(m, "vmId"); id != "" && digits(id) == id {
			k = "vm:" + id
		}
		if k != "" {
			x.lastVM[actor] = k
		}
		add(KVMStep, history.Log, k, "", "", m)
	case strings.HasPrefix(m, "allocating virtual machine from template") || strings.HasPrefix(m, "Allocating entries for VM") ||
		strings.HasPrefix(m, "Allocating nics for") || strings.HasPrefix(m, "VM starting again on the last host") ||
		strings.HasPrefix(m, "Start completed for VM") || strings.HasPrefix(m, "VM start attempt #") ||
		strings.HasPrefix(m, "VM is already stopped") || strings.HasPrefix(m, "Found a stopped") ||
		strings.HasPrefix(m, "Destroying vm") || strings.HasPrefix(m, "Expunging vm"):
		k, n := vm()
		add(KVMStep, history.Log, k, "", "", m)
		facts[len(facts)-1].Name = n
	case strings.HasPrefix(m, "Successfully released network resources for the") || strings.HasPrefix(m, "Successfully released storage resources for the") ||
		strings.HasPrefix(m, "Released nic: ") || strings.HasPrefix(m, "Asking ") && strings.Contains(m, " to release Nic"):
		// the start's or the stop's clean-up; "Released nic: NicProfile {…} for vm VM instance {…}" is the control
		// network's; "Asking VirtualRouter to release NicProfile[19-9-…]" names the VM in the profile
		k, n := vm()
		if k == "" {
			k = nicProfileVM(m)
		}
		add(KRelease, history.Log, k, "", "", m)
		facts[len(facts)-1].Name = n
	case strings.HasPrefix(m, "Starting network ") || strings.HasPrefix(m, "Restarting network") || strings.HasPrefix(m, "Performing rolling restart of routers") ||
		strings.HasPrefix(m, "Nic is allocated successfully") || strings.HasPrefix(m, "Allocating nic for vm") ||
		strings.HasPrefix(m, "Implementing the network") || strings.HasPrefix(m, "Shutting down network"):
		add(KNetDecision, history.Log, networkRef(m), "", "", m)
	case strings.HasPrefix(m, "Starting router") || strings.HasPrefix(m, "Resending ipAssoc") || strings.Contains(m, "rule(s) to apply as a part of domR") ||
		strings.HasPrefix(m, "Creating user data entry for vm") || strings.HasPrefix(m, "Applying userdata and password entry") ||
		strings.HasPrefix(m, "APPLYING VPC USERDATA RULES") || strings.HasPrefix(m, "Boot Args for"):
		k, _ := vm()
		add(KRouter, history.Log, k, "", "", m)
	case strings.HasPrefix(m, "VM Operation Thread Running") || strings.HasPrefix(m, "HA health check task is running"):
		add(KNoState, history.Log, "", "", "", m) // a background thread's tick
	default:
		if kind, ok := noStateLoggers[loggerClass(e.Logger)]; ok {
			if kind == KJob {
				obj := ""
				if j, _ := jobRef(m); j != "" {
					obj = "job:" + j
				}
				add(KJob, history.Log, obj, "", "", m)
			} else {
				add(kind, history.Log, "", "", "", m)
			}
			break
		}
		// lines of no kind we model still tell which VM a thread works on (for old transition lines)
		if strings.Contains(m, "VM") || strings.Contains(m, "-VM") {
			vm()
		}
		return nil, false, ""
	}
	return facts, true, ""
}

// nicProfileVM reads the VM of a NIC profile: NicProfile[19-9-uuid-ip-uri] (nic, VM, …) or
// NicProfile {…"vmId":9}.
func nicProfileVM(m string) string {
	if p := between(m, "NicProfile[", "]"); p != "" {
		if f := strings.Split(p, "-"); len(f) > 1 && f[1] != "" && digits(f[1]) == f[1] && f[1] != "0" {
			return "vm:" + f[1]
		}
	}
	if id := jsonField(afterFirst(m, "NicProfile {"), "vmId"); id != "" && digits(id) == id && id != "0" {
		return "vm:" + id
	}
	return ""
}

// haWorkVM reads the VM of HAWork[858-HA-111750-Running-Investigating] (id, type, VM, state, step).
func haWorkVM(m string) string {
	w := between(m, "HAWork[", "]")
	if f := strings.Split(w, "-"); len(f) >= 3 && digits(f[2]) == f[2] && f[2] != "" {
		return "vm:" + f[2]
	}
	return ""
}

func afterLast(s, sep string) string {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return ""
	}
	return s[i+len(sep):]
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	r := s[i+len(a):]
	j := strings.Index(r, b)
	if j < 0 {
		return ""
	}
	return r[:j]
}

func powerWord(m string) string {
	for _, w := range []string{"PowerOn", "PowerOff", "PowerReportMissing", "PowerUnknown"} {
		if strings.Contains(m, w) {
			return w
		}
	}
	return ""
}

// transition parses both eras of state-transition lines (log-formats.md, "State transitions").
func (x *Extractor) transition(e *Entry, actor, m string) (Fact, string) {
	var subject, from, to, event, newHost string
	if i := strings.Index(m, "state transited from ["); i >= 0 {
		subject = m[:i]
		r := m[i+len("state transited from ["):]
		from = between("["+r, "[", "]")
		to = between(r, "to [", "]")
		event = between(r, "with event [", "]")
		if nh := between(r+",", "new host: ", ", host before"); nh != "" {
			newHost = nh
		}
	} else {
		i := strings.Index(m, "state transitted from :")
		if i < 0 {
			return Fact{}, "transition line of no known form"
		}
		subject = m[:i]
		r := m[i+len("state transitted from :"):]
		j := strings.Index(r, " to ")
		k := strings.Index(r, " with event: ")
		if j < 0 || k < j+4 {
			return Fact{}, "old-style transition line without 'to' or 'with event'"
		}
		from, to = r[:j], r[j+4:k]
		event = r[k+len(" with event: "):]
		if l := strings.Index(event, "vm's original host"); l >= 0 {
			event = event[:l]
		}
		newHost = strings.TrimSpace(between(r, "new host id: ", " host id before"))
	}
	if from == "" || to == "" {
		return Fact{}, "transition line without from or to state"
	}
	f := Fact{Event: history.Event{Kind: history.State, From: from, To: to, Detail: event}}
	sub := strings.TrimSpace(subject)
	switch {
	case strings.HasPrefix(sub, "VM"):
		f.Kind = KVMTransition
		k, n := vmRef(sub)
		if k == "" {
			k = x.lastVM[actor] // the old line names no VM: the thread's last one
		}
		if k == "" {
			return Fact{}, "VM transition line names no VM and its thread named none before"
		}
		x.lastVM[actor] = k
		f.Object, f.Name = k, n
		switch {
		case newHost == "" || newHost == "null":
		case strings.HasPrefix(newHost, `Host {"id":`):
			f.Host = "host:" + jsonField(newHost, "id")
		default:
			f.Host = "host:" + strings.TrimSpace(newHost)
		}
	case strings.HasPrefix(sub, "Network") || strings.HasPrefix(sub, "Ntwk"):
		f.Kind = KNetTransition
		f.Object = networkRef(sub)
		f.Direct = strings.Contains(m, "around the state machine")
	case strings.HasPrefix(sub, "Host"):
		f.Kind = KHostTransition
		f.Object = hostRef(sub)
	case strings.HasPrefix(sub, "Volume"):
		f.Kind = KVolTransition
		f.Object = "volume:" + jsonField(sub, "id")
	default:
		f.Kind = KOtherState
		f.Object = sub
	}
	if f.Object == "" || strings.HasSuffix(f.Object, ":") {
		return Fact{}, "transition line names no object"
	}
	return f, ""
}

// command parses agent traffic: Seq h-n: Sending / Received, timeouts.
func (x *Extractor) command(e *Entry, actor, m string, base history.Event) []Fact {
	ev := base
	ev.Kind = history.Log
	f := Fact{Kind: KCommand, Event: ev}
	seq := ""
	if f := strings.Fields(m); len(f) > 1 && f[0] == "Seq" {
		seq = strings.TrimSuffix(f[1], ":")
	}
	switch {
	case strings.Contains(m, "Timed out") || strings.Contains(m, "timed out"):
		f.Kind = KTimeout
		f.To = "timeout"
	case strings.Contains(m, ": Sending"):
		f.To = "sent"
	case strings.Contains(m, ": Received"):
		f.To = "answered"
	}
	for _, c := range []string{"StartCommand", "StopCommand", "PingRoutingCommand", "CheckVirtualMachineCommand", "MigrateCommand", "RebootCommand"} {
		if strings.Contains(m, c) {
			f.Detail = c + " " + seq
			break
		}
	}
	if f.Detail == "" {
		f.Detail = seq
	}
	if n := jsonField(m, "vmName"); n != "" {
		f.Name = n
		if id := vmIDFromName(n); id != "" {
			f.Object = "vm:" + id
			x.lastVM[actor] = f.Object
		}
	}
	if h, _, ok := strings.Cut(seq, "-"); ok {
		f.Host = "host:" + h
	}
	return []Fact{f}
}
