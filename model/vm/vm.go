package vm

// State is VirtualMachine.State (spec 2.1.1), the vm_instance.state column.
type State string

// VM states, in the spec's order.
const (
	Starting  State = "Starting"
	Running   State = "Running"
	Stopping  State = "Stopping"
	Stopped   State = "Stopped"
	Destroyed State = "Destroyed"
	Expunging State = "Expunging"
	Migrating State = "Migrating"
	Error     State = "Error"
	Unknown   State = "Unknown"
	Shutdown  State = "Shutdown"
)

// States returns every VM state in the spec's order.
func States() []State {
	return []State{Starting, Running, Stopping, Stopped, Destroyed, Expunging, Migrating, Error, Unknown, Shutdown}
}

// IsTransitional reports whether the state marks an operation in flight;
// stalled-VM scans and power-report handling treat these states specially.
func (s State) IsTransitional() bool {
	switch s {
	case Starting, Stopping, Expunging, Migrating:
		return true
	}
	return false
}

// Event is VirtualMachine.Event (spec 2.1.2).
type Event string

// VM events, in the spec's order.
const (
	CreateRequested           Event = "CreateRequested"
	StartRequested            Event = "StartRequested"
	StopRequested             Event = "StopRequested"
	DestroyRequested          Event = "DestroyRequested"
	RecoveryRequested         Event = "RecoveryRequested"
	AgentReportStopped        Event = "AgentReportStopped"
	AgentReportRunning        Event = "AgentReportRunning"
	MigrationRequested        Event = "MigrationRequested"
	StorageMigrationRequested Event = "StorageMigrationRequested"
	ExpungeOperation          Event = "ExpungeOperation"
	OperationSucceeded        Event = "OperationSucceeded"
	OperationFailed           Event = "OperationFailed"
	OperationFailedToError    Event = "OperationFailedToError"
	OperationRetry            Event = "OperationRetry"
	AgentReportShutdowned     Event = "AgentReportShutdowned"
	AgentReportMigrated       Event = "AgentReportMigrated"
	RevertRequested           Event = "RevertRequested"
	SnapshotRequested         Event = "SnapshotRequested"
	FollowAgentPowerOnReport  Event = "FollowAgentPowerOnReport"
	FollowAgentPowerOffReport Event = "FollowAgentPowerOffReport"
)

// Events returns every VM event in the spec's order.
func Events() []Event {
	return []Event{
		CreateRequested, StartRequested, StopRequested, DestroyRequested, RecoveryRequested,
		AgentReportStopped, AgentReportRunning, MigrationRequested, StorageMigrationRequested,
		ExpungeOperation, OperationSucceeded, OperationFailed, OperationFailedToError, OperationRetry,
		AgentReportShutdowned, AgentReportMigrated, RevertRequested, SnapshotRequested,
		FollowAgentPowerOnReport, FollowAgentPowerOffReport,
	}
}

// Transition is one row of the s_fsm table. Usage marks transitions that
// emit usage events through the state listener.
type Transition struct {
	From  State
	Event Event
	To    State
	Usage bool
}

// Transitions is spec table 2.1.3, row for row and in the spec's order.
// Any (From, Event) pair absent here raises NoTransitionException.
var Transitions = []Transition{
	{Stopped, StartRequested, Starting, false},
	{Stopped, DestroyRequested, Destroyed, true},
	{Stopped, StopRequested, Stopped, false},
	{Stopped, AgentReportStopped, Stopped, false},
	{Stopped, OperationFailedToError, Error, true},
	{Stopped, OperationFailed, Stopped, false},
	{Stopped, ExpungeOperation, Expunging, true},
	{Stopped, AgentReportShutdowned, Stopped, false},
	{Stopped, StorageMigrationRequested, Migrating, false},
	{Stopped, FollowAgentPowerOnReport, Running, true},
	{Stopped, FollowAgentPowerOffReport, Stopped, false},
	{Starting, OperationRetry, Starting, false},
	{Starting, OperationSucceeded, Running, true},
	{Starting, OperationFailed, Stopped, false},
	{Starting, AgentReportRunning, Running, true},
	{Starting, AgentReportStopped, Stopped, false},
	{Starting, AgentReportShutdowned, Stopped, false},
	{Starting, FollowAgentPowerOnReport, Running, true},
	{Starting, FollowAgentPowerOffReport, Stopped, false},
	{Destroyed, RecoveryRequested, Stopped, true},
	{Destroyed, ExpungeOperation, Expunging, false},
	{Running, MigrationRequested, Migrating, false},
	{Running, AgentReportRunning, Running, false},
	{Running, AgentReportStopped, Stopped, true},
	{Running, StopRequested, Stopping, false},
	{Running, AgentReportShutdowned, Stopped, true},
	{Running, AgentReportMigrated, Running, false},
	{Running, OperationSucceeded, Running, false},
	{Running, FollowAgentPowerOnReport, Running, false},
	{Running, FollowAgentPowerOffReport, Stopped, true},
	{Migrating, MigrationRequested, Migrating, false},
	{Migrating, OperationSucceeded, Running, false},
	{Migrating, OperationFailed, Running, false},
	{Migrating, AgentReportRunning, Running, false},
	{Migrating, AgentReportStopped, Stopped, false},
	{Migrating, AgentReportShutdowned, Stopped, false},
	{Migrating, FollowAgentPowerOnReport, Running, false},
	{Migrating, FollowAgentPowerOffReport, Stopped, false},
	{Stopping, OperationSucceeded, Stopped, true},
	{Stopping, OperationFailed, Running, false},
	{Stopping, AgentReportRunning, Running, false},
	{Stopping, AgentReportStopped, Stopped, true},
	{Stopping, StopRequested, Stopping, false},
	{Stopping, AgentReportShutdowned, Stopped, true},
	{Stopping, FollowAgentPowerOnReport, Running, false},
	{Stopping, FollowAgentPowerOffReport, Stopped, true},
	{Expunging, OperationFailed, Expunging, false},
	{Expunging, ExpungeOperation, Expunging, false},
	{Error, DestroyRequested, Expunging, false},
	{Error, ExpungeOperation, Expunging, false},
}

// Next returns the state the FSM moves to from `from` on ev. ok is false
// where CloudStack would throw NoTransitionException. It scans Transitions
// (50 rows) on every call so it can never disagree with the table.
func Next(from State, ev Event) (to State, ok bool) {
	if t, ok := Lookup(from, ev); ok {
		return t.To, true
	}
	return "", false
}

// Lookup returns the whole transition row for (from, ev), so callers can
// also see its Usage flag.
func Lookup(from State, ev Event) (Transition, bool) {
	for _, t := range Transitions {
		if t.From == from && t.Event == ev {
			return t, true
		}
	}
	return Transition{}, false
}

// PowerState is VirtualMachine.PowerState (spec 2.1.5), stored apart from
// State in vm_instance.power_state.
type PowerState string

// Power states.
const (
	PowerUnknown       PowerState = "PowerUnknown"
	PowerOn            PowerState = "PowerOn"
	PowerOff           PowerState = "PowerOff"
	PowerReportMissing PowerState = "PowerReportMissing"
)

// PowerStates returns every power state in the spec's order.
func PowerStates() []PowerState {
	return []PowerState{PowerUnknown, PowerOn, PowerOff, PowerReportMissing}
}
