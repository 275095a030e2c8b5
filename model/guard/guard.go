package guard

import (
	"fmt"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
)

// Machine names a state machine.
type Machine string

// The machines the guards cover.
const (
	VMs      Machine = "vm"
	Networks Machine = "network"
	Hosts    Machine = "host"
	Jobs     Machine = "job"
	// Power is a VM's power_state column: its rows are From --report--> To
	Power Machine = "power"
	// HA is a VM handed to HighAvailabilityManager (an op_ha_work row persisted): From is the VM's
	// state, Event the path that handed it over, To the work's type (Restart, CheckStop). The rows are
	// read from the HA manager's "Schedule vm for HA" and "Scheduled HAWork[…]" lines.
	HA Machine = "ha"
)

// Row is one transition: a row of a machine's table (the job machine's rows are IN_PROGRESS to each
// end state).
type Row struct {
	Machine         Machine
	From, Event, To string
}

func (r Row) String() string {
	return fmt.Sprintf("%s %s --%s--> %s", r.Machine, r.From, r.Event, r.To)
}

// Verdict is a guard's answer for one event.
type Verdict int

// The verdicts.
const (
	Allowed Verdict = iota
	Violated
	// Undecidable: the history lacks what the guard needs (the settings, the thread names, lock lines).
	Undecidable
	// Inapplicable: the row is the guard's but this change is not the case it judges (a disconnect
	// that was no ping timeout): neither allowed nor counted.
	Inapplicable
)

// Outcome is a guard's answer with its reason and the history lines it rests on.
type Outcome struct {
	Verdict  Verdict
	Reason   string
	Evidence []history.Event
}

func allowed() Outcome { return Outcome{} }

func inapplicable() Outcome { return Outcome{Verdict: Inapplicable} }

func violated(evidence []history.Event, format string, args ...any) Outcome {
	return Outcome{Verdict: Violated, Reason: fmt.Sprintf(format, args...), Evidence: evidence}
}

func undecidable(format string, args ...any) Outcome {
	return Outcome{Verdict: Undecidable, Reason: fmt.Sprintf(format, args...)}
}

// Guard is when CloudStack allows the transitions it applies to.
type Guard struct {
	Name string
	// Rule says what CloudStack requires, in a sentence; Situation names what a run must reach for
	// the guard to judge anything ("the network GC shut a network down").
	Rule, Situation string
	// Java is the method that enforces it; Source the repository, commit and file it was read in.
	Java, Source string
	// Applies selects the rows (and, for a row shared by several paths, the acting thread) it judges.
	Applies func(r Row, actor Actor) bool
	Check   func(c *Checker, e *history.Event, r Row) Outcome
}

// Violation is a transition a guard did not allow.
type Violation struct {
	Guard  string
	Row    Row
	Event  history.Event
	Reason string
	// Evidence are the history lines the guard's verdict rests on, the transition last.
	Evidence []history.Event
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s at %s by %s (line %d): %s", v.Guard, v.Row, v.Event.Time.Format("15:04:05.000"), v.Event.Actor, v.Event.Seq, v.Reason)
}

// Config is the settings the guards read; a zero duration is a setting the history does not give,
// and the guards that need it say Undecidable.
type Config struct {
	PingInterval time.Duration // ping.interval
	PingTimeout  time.Duration // ping.interval × ping.timeout
	GCWait       time.Duration // network.gc.wait
	JobExpire    time.Duration // job.expire.minutes
	JobCancel    time.Duration // job.cancel.threshold.minutes
	Wait         time.Duration // wait (AgentManager.Wait, TransitionTask's operation timeout)
	// FromLog: the history was read from a log. A log names a work job by its thread's context, not
	// its VM, and does not show the power-state write of a successful StopCommand, so the guards that
	// ask for either cannot decide.
	FromLog bool
}

// Actor is the kind of thread that acts, from its name.
type Actor int

// Thread kinds, as CloudStack names its thread pools.
const (
	ActorUnknown    Actor = iota
	ActorWorkJob          // Work-Job-Executor: a VM work job (start, stop, migrate)
	ActorAPIJob           // API-Job-Executor: an API command's job (deploy, destroy, ...)
	ActorAPI              // a synchronous API call (create records)
	ActorReport           // AgentTaskPool, AgentConnectTaskPool, AgentManager-Handler, DirectAgent: an agent's request (ping reports)
	ActorJobGC            // AsyncJobMgr-Heartbeat: the job heartbeat and GC (orphan cleanup, TransitionTask)
	ActorNetworkGC        // Network-Scavenger: the network garbage collector
	ActorHA               // HA-Worker
	ActorDisconnect       // DisconnectTask, AgentMonitor, AgentConnection: disconnect handling
	ActorStartup          // main: the management server's start
	ActorCluster          // Cluster-Heartbeat: a peer's departure
)

var actorPrefixes = []struct {
	prefix string
	kind   Actor
}{
	{"Work-Job-Executor", ActorWorkJob},
	{"API-Job-Executor", ActorAPIJob},
	{"AgentConnectTaskPool", ActorReport},
	{"AgentTaskPool", ActorReport},
	{"AgentManager-Handler", ActorReport},
	{"DirectAgent", ActorReport},
	{"AsyncJobMgr-Heartbeat", ActorJobGC},
	{"Network-Scavenger", ActorNetworkGC},
	{"HA-Worker", ActorHA},
	{"DisconnectTask", ActorDisconnect},
	{"AgentMonitor", ActorDisconnect},
	{"AgentConnection", ActorDisconnect},
	{"Cluster-Heartbeat", ActorCluster},
}

// Classify names the kind of a thread: "ms2:Work-Job-Executor-4" and "Work-Job-Executor-4:ctx-1f2e"
// are both work-job threads.
func Classify(thread string) Actor {
	name := thread
	if i := strings.LastIndexByte(name, '/'); i >= 0 && !strings.HasPrefix(name, "agent/") {
		name = name[i+1:] // a log's thread qualified by its server ("ms1/Work-Job-Executor-4")
	}
	if i := strings.IndexByte(name, ':'); i > 0 && strings.HasPrefix(name, "ms") && !strings.Contains(name[:i], "-") {
		name = name[i+1:] // a peer server's thread in a cluster run
	}
	if name == "api" {
		return ActorAPI
	}
	if name == "main" {
		return ActorStartup
	}
	for _, p := range actorPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.kind
		}
	}
	return ActorUnknown
}
