package host

// Status is com.cloud.host.Status, the host.status column.
type Status string

// Host statuses, in the spec's order.
const (
	Creating     Status = "Creating"
	Connecting   Status = "Connecting"
	Up           Status = "Up"
	Down         Status = "Down"
	Disconnected Status = "Disconnected"
	Alert        Status = "Alert"
	Removed      Status = "Removed"
	Error        Status = "Error"
	Rebalancing  Status = "Rebalancing"
	Unknown      Status = "Unknown"
)

// Statuses returns every status in the spec's order. The "no status yet"
// value "" is not included.
func Statuses() []Status {
	return []Status{Creating, Connecting, Up, Down, Disconnected, Alert, Removed, Error, Rebalancing, Unknown}
}

// flags are (updateManagementServer, checkManagementServer, lostConnection),
// spec 2.3.
type flags struct{ update, check, lost bool }

var statusFlags = map[Status]flags{
	Creating:     {true, false, false},
	Connecting:   {true, false, false},
	Up:           {true, false, false},
	Down:         {true, true, true},
	Disconnected: {true, true, true},
	Alert:        {true, true, true},
	Removed:      {true, false, true},
	Error:        {true, false, true},
	Rebalancing:  {true, false, true},
	Unknown:      {false, false, false},
}

// UpdateManagementServer is the status's updateManagementServer flag.
func (s Status) UpdateManagementServer() bool { return statusFlags[s].update }

// CheckManagementServer is the status's checkManagementServer flag.
func (s Status) CheckManagementServer() bool { return statusFlags[s].check }

// LostConnection is the status's lostConnection flag.
func (s Status) LostConnection() bool { return statusFlags[s].lost }

// MayReconnect reports whether a host in this status is only transiently
// unreachable and expected back with its domains still running, so its VMs'
// resources must not be released as if they were stopped (the D3 fix).
func (s Status) MayReconnect() bool {
	switch s {
	case Connecting, Disconnected, Alert, Rebalancing:
		return true
	}
	return false
}

// Event is Status.Event.
type Event string

// Host events, in the spec's order. The Error event is EventError because
// the status Error already takes that name.
const (
	AgentConnected        Event = "AgentConnected"
	PingTimeout           Event = "PingTimeout"
	ShutdownRequested     Event = "ShutdownRequested"
	AgentDisconnected     Event = "AgentDisconnected"
	HostDown              Event = "HostDown"
	Ping                  Event = "Ping"
	ManagementServerDown  Event = "ManagementServerDown"
	WaitedTooLong         Event = "WaitedTooLong"
	Remove                Event = "Remove"
	Ready                 Event = "Ready"
	RequestAgentRebalance Event = "RequestAgentRebalance"
	StartAgentRebalance   Event = "StartAgentRebalance"
	RebalanceCompleted    Event = "RebalanceCompleted"
	RebalanceFailed       Event = "RebalanceFailed"
	EventError            Event = "Error"
)

// Events returns every host event in the spec's order.
func Events() []Event {
	return []Event{
		AgentConnected, PingTimeout, ShutdownRequested, AgentDisconnected, HostDown, Ping,
		ManagementServerDown, WaitedTooLong, Remove, Ready, RequestAgentRebalance,
		StartAgentRebalance, RebalanceCompleted, RebalanceFailed, EventError,
	}
}

// Transition is one (From, Event) → To edge of the host status FSM.
type Transition struct {
	From  Status
	Event Event
	To    Status
}

// Transitions is the spec 2.3 table, one row per edge, in the spec's order.
// From "" is a host row with no status yet; the spec's "(null) / Creating"
// row gives it AgentConnected only, Error being for Creating alone.
// RequestAgentRebalance appears in no edge.
var Transitions = []Transition{
	{"", AgentConnected, Connecting},
	{Creating, AgentConnected, Connecting},
	{Creating, EventError, Error},

	{Connecting, AgentConnected, Connecting},
	{Connecting, Ready, Up},
	{Connecting, PingTimeout, Alert},
	{Connecting, ShutdownRequested, Disconnected},
	{Connecting, HostDown, Down},
	{Connecting, Ping, Connecting},
	{Connecting, ManagementServerDown, Disconnected},
	{Connecting, AgentDisconnected, Alert},

	{Up, PingTimeout, Alert},
	{Up, AgentDisconnected, Alert},
	{Up, ShutdownRequested, Disconnected},
	{Up, HostDown, Down},
	{Up, Ping, Up},
	{Up, AgentConnected, Connecting},
	{Up, ManagementServerDown, Disconnected},
	{Up, StartAgentRebalance, Rebalancing},
	{Up, Remove, Removed},

	{Disconnected, ShutdownRequested, Disconnected},
	{Disconnected, PingTimeout, Alert},
	{Disconnected, AgentConnected, Connecting},
	{Disconnected, Ping, Up},
	{Disconnected, HostDown, Down},
	{Disconnected, ManagementServerDown, Disconnected},
	{Disconnected, WaitedTooLong, Alert},
	{Disconnected, Remove, Removed},
	{Disconnected, AgentDisconnected, Disconnected},

	{Down, AgentConnected, Connecting},
	{Down, Remove, Removed},
	{Down, ManagementServerDown, Down},
	{Down, AgentDisconnected, Down},
	{Down, PingTimeout, Down},
	{Down, HostDown, Down},

	{Alert, AgentConnected, Connecting},
	{Alert, Ping, Up},
	{Alert, Remove, Removed},
	{Alert, ManagementServerDown, Alert},
	{Alert, AgentDisconnected, Alert},
	{Alert, ShutdownRequested, Disconnected},
	{Alert, HostDown, Down},

	{Rebalancing, RebalanceFailed, Disconnected},
	{Rebalancing, RebalanceCompleted, Connecting},
	{Rebalancing, ManagementServerDown, Disconnected},
	{Rebalancing, AgentConnected, Connecting},
	{Rebalancing, AgentDisconnected, Rebalancing},

	{Error, AgentConnected, Connecting},
}

// Next returns the status reached from `from` on ev; ok is false where the
// FSM has no edge. It scans Transitions so it always agrees with the table.
func Next(from Status, ev Event) (to Status, ok bool) {
	for _, t := range Transitions {
		if t.From == from && t.Event == ev {
			return t.To, true
		}
	}
	return "", false
}
