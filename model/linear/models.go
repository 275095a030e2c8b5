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
	VMDown    = "down"    // an injected fault stopped the domain (crash, guest shutdown)
	VMObserve = "observe" // the domain's truth and the record, seen at one moment
)

// VMInput is one operation on a VM.
type VMInput struct {
	Kind string
	Name string  // the client operation as called (deploy, forceStop, ...)
	Seen VMState // for observe
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
//     too late, power sync adopting it later), but never kills the record;
//   - a stop that succeeds leaves the domain stopped; one that fails may or may not have stopped it;
//   - a destroy or expunge that succeeds leaves the domain stopped and the record dead; one that fails
//     may have done any part of that, except to kill the record while the domain runs;
//   - a fault that kills or powers off the domain leaves it stopped;
//   - an observation sees exactly the state: a running domain with a dead record, a running domain
//     after a successful stop or destroy with no start since, or a stopped domain after a successful
//     start with no stop, destroy or fault since, cannot be explained (D2, D3).
var VMModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{VMState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(VMState), input.(VMInput), output.(Outcome)
		return vmStep(s, in, out)
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(VMInput), output.(Outcome)
		if in.Kind == VMObserve {
			return "observe: " + in.Seen.String()
		}
		return in.Name + " -> " + out.String()
	},
	DescribeState: func(state any) string { return state.(VMState).String() },
}

func vmStep(s VMState, in VMInput, out Outcome) []any {
	okStates, failStates := vmOutcomes(s, in)
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
			failed = append(failed, VMState{On: true})
		}
	case VMStop:
		ok = []any{VMState{On: false, Dead: s.Dead}}
		// a failed stop may still have stopped the domain (a command delivered late), behind the
		// record's back: the record may say Running, so it is stale
		failed = []any{s, VMState{On: false, Dead: s.Dead, Stale: !s.Dead}}
	case VMDestroy:
		ok = []any{VMState{Dead: true}}
		failed = []any{s, VMState{On: false, Dead: s.Dead, Stale: !s.Dead}, VMState{Dead: true}}
	case VMDown:
		ok = []any{VMState{On: false, Dead: s.Dead, Stale: !s.Dead}}
		failed = ok
	case VMObserve:
		if in.Seen.On == s.On && in.Seen.Dead == s.Dead {
			ok = []any{s}
		}
		failed = ok
	}
	return ok, failed
}

// ---- network

// Transition is one write of a network's state.
type Transition struct{ From, To string }

// NetInput is a critical section on a network: the writes one thread made while it held the network's
// lock, or a single write made without it.
type NetInput struct {
	Actor  string
	Locked bool
	Writes []Transition
}

// NetModel is the sequential specification of a network under its lock, in plain words: the lock makes
// a holder's writes one atomic step, so the writes of every critical section (and every unlocked write
// on its own) must chain — each starts from the state the previous one left — in some order consistent
// with real time. A section whose own writes do not chain (Allocated→Implementing, then Shutdown→
// Allocated) means someone else wrote inside it: the orphaned-network cleanup of D1.
var NetModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s := state.(string)
		for _, w := range input.(NetInput).Writes {
			if w.From != s {
				return false, state
			}
			s = w.To
		}
		return true, s
	},
	DescribeOperation: func(input, output any) string {
		in := input.(NetInput)
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
	DescribeState: func(state any) string { return or(state.(string), "(none)") },
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

// Models are the models by the prefix of the objects they check.
var Models = map[string]porcupine.Model{
	"vm":      VMModel.ToModel(),
	"network": NetModel,
	"ip":      IPModel,
}

// ModelNames lists the models, sorted.
func ModelNames() []string { return slices.Sorted(maps.Keys(Models)) }
