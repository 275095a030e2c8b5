package impl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImplementNetworkCatchesWhatTheJavaCatches pins which exceptions NetworkOrchestrator.
// implementNetwork (bhouse-nexthop/cloudstack@b58b6567, engine/orchestration/src/main/java/org/apache/
// cloudstack/engine/orchestration/NetworkOrchestrator.java) catches inside its try: NoTransitionException
// and `CloudRuntimeException | OperationTimedoutException`, which return Pair(null, null) (prepare then
// throws a CloudRuntimeException "Failed to implement Network"). ConcurrentOperationException extends
// CloudRuntimeException (apache/cloudstack@1502b605, api/src/main/java/com/cloud/exception/
// ConcurrentOperationException.java), so one thrown inside the try is caught as well; only the lock's
// (thrown before the try) goes through. The checked ResourceUnavailableException, of which
// AgentUnavailableException is one, is let through to prepare and orchestrateStart.
func TestImplementNetworkCatchesWhatTheJavaCatches(t *testing.T) {
	for _, c := range []struct {
		err    error
		caught bool
	}{
		{runtimeErr("Unable to start r-1"), true},
		{&ConcurrentOperationError{Msg: "Unable to change the state of r-1"}, true},
		{&OperationTimedoutError{Host: "h1", Cmd: "StartCommand"}, true},
		{&AgentUnavailableError{Host: "h1", Reason: "Unable to start r-1"}, false},
		{&ResourceUnavailableError{Resource: "Network:1", Reason: "Can't find all necessary running routers!"}, false},
		{fmt.Errorf("wrapped: %w", &AgentUnavailableError{Host: "h1"}), false},
	} {
		require.Equal(t, c.caught, caughtByImplementNetwork(c.err), "%v", c.err)
	}
}
