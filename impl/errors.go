package impl

import (
	"fmt"
	"strings"
)

// The exceptions the orchestration paths branch on, named as in CloudStack.

// AgentUnavailableError is AgentUnavailableException: the host could not be asked at all.
type AgentUnavailableError struct {
	Host, Reason string
}

func (e *AgentUnavailableError) Error() string {
	return fmt.Sprintf("AgentUnavailableException: Resource [Host:%s] is unreachable: Host %s: %s", e.Host, e.Host, e.Reason)
}

// OperationTimedoutError is OperationTimedoutException: no answer within the wait.
type OperationTimedoutError struct {
	Host, Cmd string
}

func (e *OperationTimedoutError) Error() string {
	return fmt.Sprintf("OperationTimedoutException: Commands %s to Host %s timed out", e.Cmd, e.Host)
}

// ResourceUnavailableError is ResourceUnavailableException. Resource is "Scope:id", the exception's
// scope class (Host, Pod, DataCenter, Cluster, StoragePool, Network, ...) and its resource id.
type ResourceUnavailableError struct {
	Resource, Reason string
}

func (e *ResourceUnavailableError) Error() string {
	return fmt.Sprintf("ResourceUnavailableException: Resource [%s] is unreachable: %s", e.Resource, e.Reason)
}

// Scope is getScope's simple name and getResourceId.
func (e *ResourceUnavailableError) Scope() (scope, id string) {
	scope, id, _ = strings.Cut(e.Resource, ":")
	return scope, id
}

// InsufficientCapacityError is InsufficientCapacityException; the planner's (orchestrateStart finding
// no host) is its subclass InsufficientServerCapacityException, scope DataCenter.
type InsufficientCapacityError struct{ Msg string }

func (e *InsufficientCapacityError) Error() string {
	return "InsufficientServerCapacityException: " + e.Msg
}

// ConcurrentOperationError is ConcurrentOperationException.
type ConcurrentOperationError struct{ Msg string }

func (e *ConcurrentOperationError) Error() string { return "ConcurrentOperationException: " + e.Msg }

// CloudRuntimeError is CloudRuntimeException.
type CloudRuntimeError struct{ Msg string }

func (e *CloudRuntimeError) Error() string { return "CloudRuntimeException: " + e.Msg }

func runtimeErr(format string, args ...any) error {
	return &CloudRuntimeError{Msg: fmt.Sprintf(format, args...)}
}
