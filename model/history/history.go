// Package history is the recorded history of a run: every client operation with its call and return,
// every state change with its actor, faults, observations and the management server's log lines, as
// JSON lines a checker (or a person reading management-server.log beside it) can replay.
package history

import "time"

// Event kinds.
const (
	Call    = "call"    // a client operation begins
	Return  = "return"  // a client operation ends (OK or Err); an indeterminate one never returns
	State   = "state"   // a record's state changed (VM, network, host, job, volume, NIC)
	Power   = "power"   // a VM's power state column changed
	IP      = "ip"      // an IP left or returned to the pool
	Lock    = "lock"    // a lock-table entry was taken or released
	Log     = "log"     // a management-server or agent log line
	Fault   = "fault"   // a fault began (From="") or ended (To="")
	Domain  = "domain"  // a domain started or stopped on a host (the hypervisor's truth)
	Observe = "observe" // a checker's observation
	// Violation is an invariant violation the harness found at this point (Object, To = invariant).
	Violation = "violation"
)

// Event is one line of a history.
type Event struct {
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`
	Kind   string    `json:"kind"`
	Object string    `json:"object,omitempty"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Op     int       `json:"op,omitempty"`
	Level  string    `json:"level,omitempty"`
	Detail string    `json:"detail,omitempty"`
	// LockHolder is, for a network state change, the actor that held the network's lock at the write.
	LockHolder string `json:"lockHolder,omitempty"`
	// Direct marks a state written around the state machine.
	Direct bool `json:"direct,omitempty"`
}

// Sink receives events as they happen.
type Sink interface {
	Emit(e Event)
}
