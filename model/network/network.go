package network

// State is Network.State (spec 2.2).
type State string

// Network states, in the spec's order.
const (
	Allocated    State = "Allocated"
	Setup        State = "Setup"
	Implementing State = "Implementing"
	Implemented  State = "Implemented"
	Shutdown     State = "Shutdown"
	Destroy      State = "Destroy"
)

// States returns every network state in the spec's order.
func States() []State {
	return []State{Allocated, Setup, Implementing, Implemented, Shutdown, Destroy}
}

// Event is Network.Event (spec 2.2).
type Event string

// Network events, in the spec's order.
const (
	ImplementNetwork   Event = "ImplementNetwork"
	DestroyNetwork     Event = "DestroyNetwork"
	OperationSucceeded Event = "OperationSucceeded"
	OperationFailed    Event = "OperationFailed"
)

// Events returns every network event in the spec's order.
func Events() []Event {
	return []Event{ImplementNetwork, DestroyNetwork, OperationSucceeded, OperationFailed}
}

// Transition is one row of the network FSM.
type Transition struct {
	From  State
	Event Event
	To    State
}

// Transitions is the spec 2.2 table, in the spec's order. ImplementNetwork
// is accepted only from Allocated: a network left in Shutdown must first go
// back to Allocated.
var Transitions = []Transition{
	{Allocated, ImplementNetwork, Implementing},
	{Implementing, OperationSucceeded, Implemented},
	{Implementing, OperationFailed, Shutdown},
	{Implemented, DestroyNetwork, Shutdown},
	{Shutdown, OperationSucceeded, Allocated},
	{Shutdown, OperationFailed, Shutdown},
	{Setup, DestroyNetwork, Destroy},
	{Allocated, DestroyNetwork, Destroy},
}

// Next returns the state reached from `from` on ev; ok is false where
// StateMachine2 would throw NoTransitionException. It scans Transitions so it
// always agrees with the table.
func Next(from State, ev Event) (to State, ok bool) {
	for _, t := range Transitions {
		if t.From == from && t.Event == ev {
			return t.To, true
		}
	}
	return "", false
}
