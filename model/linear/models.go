// Package linear holds porcupine models of CloudStack's objects as sequential specifications, and the
// code that turns a recorded history into one porcupine history per object (a VM, a network, a guest
// IP). It is the second detector beside the invariants: it looks only at what clients saw (calls,
// returns, results), at the hypervisors' truth as observed, and at the record writes, and asks whether
// some sequential order of the operations explains all of it.
package linear

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// ---- VM

// VMState is what the sequential VM is: whether its domain runs, and whether its record is dead
// (Destroyed, Expunging, Expunged or gone).
type VMState struct {
	On   bool
	Dead bool
	// Stale: the domain went down behind the record's back (a fault, or a failed stop whose command
	// still arrived), so the record may still say Running until power sync catches up, and a start
	// then succeeds without starting anything.
	Stale bool
	// Undo: the running domain is one a failed or unknown start booted, whose own cleanup may still
	// stop it. An attempt whose StartAnswer succeeded and whose changeState(OperationSucceeded) then
	// failed (a compare-and-set on the copy the attempt read: the row moved meanwhile) throws, and
	// the attempt's finally sends cleanup's StopCommand (VirtualMachineManagerImpl.orchestrateStart):
	// one start, two effects, on and then off. An observation that sees the domain off takes that
	// stop; any operation's outcome ends the excuse.
	Undo bool
	// GhostSince is when the observations began to see the record say Running with no domain, in
	// Unix nanoseconds of the run's virtual time (0: they do not). Power sync must end that within
	// the model's Bounds.Ghost, or the Stale excuse would hide the record for ever.
	GhostSince int64
}

func (s VMState) String() string {
	d, r := "off", "live"
	if s.On {
		d = "on"
	}
	if s.Dead {
		r = "dead"
	}
	return "domain " + d + ", record " + r
}

// VM operation kinds.
const (
	VMStart   = "start"   // deploy, start, startNoRetry
	VMStop    = "stop"    // stop, forceStop
	VMDestroy = "destroy" // destroy, destroyExpunge, expunge
	VMMigrate = "migrate" // migrate: the guest moves to another host, running
	VMRecover = "recover" // recover: a destroyed record is live again
	VMDown    = "down"    // an injected fault stopped the domain (crash, guest shutdown)
	VMObserve = "observe" // the domain's truth and the record, seen at one moment
)

// VMInput is one operation on a VM.
type VMInput struct {
	Kind string
	Name string  // the client operation as called (deploy, forceStop, ...)
	Seen VMState // for observe
	// For observe, what the staleness bound needs (all zero in histories that do not say):
	// Record is the record's state as seen ("Running", "Stopped", …); At the observation's virtual
	// time (Unix ns); HostsUp whether every host was Up; UpSince the latest time a host came back Up
	// after being away (Unix ns, 0 if none did), from which its reports take Bounds.ReportGrace.
	Record  string
	At      int64
	HostsUp bool
	UpSince int64
}

// Bounds are a run's timing the VM model judges staleness by; zero values leave it unbounded.
type Bounds struct {
	// Ghost is how long the record may say Running while no domain runs, on hosts whose reports
	// flow (harness.GhostBound: 5 × ping.interval).
	Ghost time.Duration
	// ReportGrace is how long a host that came back Up takes before its reports count.
	ReportGrace time.Duration
}

// ghost is the observation step's bound: an observation may see the record say Running with no
// domain behind it (stale: a fault or a late stop went past the record, or a stale report revived
// it) only until Ghost has passed on settled hosts since it was first seen. As the ghost-record
// invariant, the time counts from the later of the first such observation and the moment every host
// was settled again; it restarts when an observation sees the ghost gone.
func (b Bounds) ghost(s VMState, in VMInput) (VMState, bool) {
	if in.At == 0 || in.Seen.On || in.Seen.Dead || in.Record != "Running" {
		s.GhostSince = 0
		return s, true
	}
	if s.GhostSince == 0 {
		s.GhostSince = in.At
	}
	if b.Ghost <= 0 || !in.HostsUp {
		return s, true
	}
	from := s.GhostSince
	if in.UpSince != 0 {
		from = max(from, in.UpSince+int64(b.ReportGrace))
	}
	return s, in.At-from <= int64(b.Ghost)
}

// Outcome is how an operation ended for its client.
type Outcome int

// Outcomes.
const (
	OK Outcome = iota
	Failed
	Unknown // never returned (a timeout, a cut link): Jepsen's :info
)

func (o Outcome) String() string { return [...]string{"ok", "failed", "unknown"}[o] }

// VMModel is the sequential specification of a VM, in plain words:
//   - a start that succeeds leaves the domain running and the record live; a start on a dead record
//     cannot succeed; a start that fails may leave the domain running or not (an agent that answered
//     too late, power sync adopting it later), but never kills the record; it may also boot the
//     domain and then stop it in its own cleanup (a compare-and-set of its success that failed), once;
//   - a stop that succeeds leaves the domain stopped; one that fails may or may not have stopped it;
//   - a destroy or expunge that succeeds leaves the domain stopped and the record dead; one that fails
//     may have done any part of that, except to kill the record while the domain runs;
//   - a migration that succeeds leaves the domain as it was (it cannot start a stopped one nor
//     succeed on a dead record); one that fails may have stopped it;
//   - a recover that succeeds makes a dead record live, its domain stopped; one that fails changes
//     nothing;
//   - a fault that kills or powers off the domain leaves it stopped;
//   - an observation sees exactly the state: a running domain with a dead record, a running domain
//     after a successful stop or destroy with no start since, or a stopped domain after a successful
//     start with no stop, destroy or fault since, cannot be explained (D2, D3).
//
// With Bounds, an observation may also see the record say Running with no domain only within
// Bounds.Ghost (see Bounds.ghost); VMModel has none.
var VMModel = NewVMModel(Bounds{})

// NewVMModel is VMModel with the staleness bounds of a run.
func NewVMModel(b Bounds) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Init: func() []any { return []any{VMState{}} },
		Step: func(state, input, output any) []any {
			s, in, out := state.(VMState), input.(VMInput), output.(Outcome)
			return vmStep(s, in, out, b)
		},
		DescribeOperation: describeVMOp,
		DescribeState:     func(state any) string { return state.(VMState).String() },
	}
}

func describeVMOp(input, output any) string {
	in, out := input.(VMInput), output.(Outcome)
	if in.Kind == VMObserve {
		return "observe: " + in.Seen.String()
	}
	return in.Name + " -> " + out.String()
}

func vmStep(s VMState, in VMInput, out Outcome, b Bounds) []any {
	if in.Kind == VMObserve {
		if s.Undo && s.On && !in.Seen.On {
			// the start's cleanup stopped the domain it booted, behind a record power sync may have
			// set Running meanwhile (a start whose job is gone no longer postpones reports)
			s = VMState{On: false, Dead: s.Dead, Stale: !s.Dead, GhostSince: s.GhostSince}
		}
		if in.Seen.On != s.On || in.Seen.Dead != s.Dead {
			return nil
		}
		if next, ok := b.ghost(s, in); ok {
			return []any{next}
		}
		return nil
	}
	okStates, failStates := vmOutcomes(s, in)
	// only observations see the record, so only they move the ghost clock
	for _, l := range [][]any{okStates, failStates} {
		for i := range l {
			n := l[i].(VMState)
			n.GhostSince = s.GhostSince
			l[i] = n
		}
	}
	switch out {
	case OK:
		return okStates
	case Failed:
		return failStates
	}
	return append(okStates, failStates...)
}

func vmOutcomes(s VMState, in VMInput) (ok, failed []any) {
	switch in.Kind {
	case VMStart:
		if !s.Dead {
			ok = []any{VMState{On: true}}
		}
		if s.Stale {
			ok = append(ok, s)
		}
		failed = []any{s, VMState{On: false, Dead: s.Dead}}
		if !s.Dead {
			failed = append(failed, VMState{On: true}, VMState{On: true, Undo: true})
		}
	case VMStop:
		ok = []any{VMState{On: false, Dead: s.Dead}}
		// a failed stop may still have stopped the domain (a command delivered late), behind the
		// record's back: the record may say Running, so it is stale
		failed = []any{s, VMState{On: false, Dead: s.Dead, Stale: !s.Dead}}
	case VMDestroy:
		ok = []any{VMState{Dead: true}}
		failed = []any{s, VMState{On: false, Dead: s.Dead, Stale: !s.Dead}, VMState{Dead: true}}
	case VMMigrate:
		// VMMI.migrate: only a Running VM migrates, and its domain runs on, on the destination: a
		// success changes nothing the model follows (which host is not). It is not held to a running
		// domain: a guest the model saw stopped may run again unobserved (power sync adopting the
		// domain a caller's forced stop left running, while the checkers leave the VM to the operator).
		// A failed migration leaves it where it was, or (a cleanup StopCommand to the destination after
		// the domain got there, the check on the destination failing) stopped behind a record that
		// may still say Running.
		if !s.Dead {
			ok = []any{s}
		}
		failed = []any{s, VMState{On: false, Dead: s.Dead, Stale: !s.Dead}}
	case VMRecover:
		// UserVmManagerImpl.recoverVirtualMachine: Destroyed → Stopped, nothing started
		if s.Dead && !s.On {
			ok = []any{VMState{}}
		}
		failed = []any{s}
	case VMDown:
		ok = []any{VMState{On: false, Dead: s.Dead, Stale: !s.Dead}}
		failed = ok
	}
	return ok, failed
}

// ---- network

// Transition is one write of a network's state.
type Transition struct{ From, To string }

// Network client operations a NetInput may be instead of writes.
const (
	NetDelete = "deleteNetwork" // a deleteNetwork call, as it returned (Out)
	NetNIC    = "nic"           // a deploy or allocate into the network that returned ok: a VM has a NIC on it
	// NetObserve is a look at the network's row as the records list it (Seen: NetListed or
	// NetRemoved), made after a deleteNetwork was called on it.
	NetObserve = "observe"
)

// What a look at a network's row saw (NetInput.Seen).
const (
	NetListed  = "listed"
	NetRemoved = "removed"
)

// NetInput is a critical section on a network: the writes one thread made while it held the network's
// lock, or a single write made without it; or, with Client set, a client's operation on it.
type NetInput struct {
	Actor  string
	Locked bool
	Writes []Transition
	Client string  // NetDelete, NetNIC, NetObserve or "" (writes)
	Out    Outcome // a NetDelete's outcome
	Seen   string  // a NetObserve's: NetListed or NetRemoved
}

// NetState is the sequential network: its row's state, and whether a deleteNetwork removed it.
type NetState struct {
	State   string
	Deleted bool
}

func (s NetState) String() string {
	if s.Deleted {
		return or(s.State, "(none)") + ", deleted"
	}
	return or(s.State, "(none)")
}

// NetModel is the sequential specification of a network under its lock, in plain words: the lock makes
// a holder's writes one atomic step, so the writes of every critical section (and every unlocked write
// on its own) must chain — each starts from the state the previous one left — in some order consistent
// with real time. A section whose own writes do not chain (Allocated→Implementing, then Shutdown→
// Allocated) means someone else wrote inside it: the orphaned-network cleanup of D1.
//
// A deleteNetwork that returned ok (NetworkOrchestrator.destroyNetwork) found the network Destroy —
// its job wrote it — and removed the row: nothing writes the network after it, and no deploy into it
// succeeds (the API's networkids names no removed network). A delete that failed, or never returned,
// changes nothing the model follows: it may have shut the network down, which its writes say.
//
// A look at the row keeps the delete's promise: after a delete that returned ok the network is no
// longer listed, and a network seen removed was destroyed first (its state Destroy, by a delete
// whose answer may not have come back; or unknown, in a world whose history has no record writes).
var NetModel = porcupine.Model{
	Init: func() any { return NetState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(NetState), input.(NetInput)
		switch in.Client {
		case NetDelete:
			if in.Out != OK {
				return true, s
			}
			if s.State != "Destroy" || s.Deleted {
				return false, s
			}
			s.Deleted = true
			return true, s
		case NetNIC:
			return !s.Deleted, s
		case NetObserve:
			if in.Seen == NetListed {
				return !s.Deleted, s
			}
			if !s.Deleted && s.State != "Destroy" && s.State != "" {
				return false, s
			}
			s.Deleted = true
			return true, s
		}
		if s.Deleted && len(in.Writes) > 0 {
			return false, s
		}
		for _, w := range in.Writes {
			if w.From != s.State {
				return false, state
			}
			s.State = w.To
		}
		return true, s
	},
	DescribeOperation: func(input, output any) string {
		in := input.(NetInput)
		switch in.Client {
		case NetDelete:
			return fmt.Sprintf("%s: deleteNetwork -> %s", in.Actor, in.Out)
		case NetNIC:
			return in.Actor + ": a deploy into it returned ok (a NIC on it)"
		case NetObserve:
			if in.Seen == NetListed {
				return "observe: the records list it"
			}
			return "observe: its row is removed"
		}
		var ws []string
		for _, w := range in.Writes {
			ws = append(ws, or(w.From, "(new)")+"→"+w.To)
		}
		lock := "without the lock"
		if in.Locked {
			lock = "holding the lock"
		}
		return fmt.Sprintf("%s %s: %s", in.Actor, lock, strings.Join(ws, ", "))
	},
	DescribeState: func(state any) string { return state.(NetState).String() },
}

// ---- guest IP

// IPInput is a write of an address's holder by the management server (From → To, "free" or "vm:N"),
// or an observation of the running domains that use the address.
type IPInput struct {
	Write    bool
	From, To string
	Users    []string // observed: the VMs whose running domains use it, sorted
}

// IPModel is the sequential specification of a guest IP, in plain words: the pool is a register whose
// writes chain (free → vm:N → free …); a running domain may use the address only while the register
// holds its VM, so an observation sees no user or exactly the holder. Two users, or a user of a free
// or reassigned address, cannot be explained (the D2 and D3 end state).
var IPModel = porcupine.Model{
	Init: func() any { return "free" },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(string), input.(IPInput)
		if in.Write {
			return in.From == s, in.To
		}
		switch len(in.Users) {
		case 0:
			return true, s
		case 1:
			return in.Users[0] == s, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in := input.(IPInput)
		if in.Write {
			return in.From + " → " + in.To
		}
		if len(in.Users) == 0 {
			return "observe: no running domain uses it"
		}
		return "observe: used by the running domains of " + strings.Join(in.Users, ", ")
	},
	DescribeState: func(state any) string { return "held by " + state.(string) },
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Models are the models by the prefix of the objects they check, with no staleness bound.
var Models = ModelsWith(Bounds{})

// ModelsWith are the models with a run's staleness bounds.
func ModelsWith(b Bounds) map[string]porcupine.Model {
	vm := NewVMModel(b)
	return map[string]porcupine.Model{
		"vm":      vm.ToModel(),
		"network": NetModel,
		"ip":      IPModel,
	}
}

// ModelNames lists the models, sorted.
func ModelNames() []string { return slices.Sorted(maps.Keys(Models)) }
