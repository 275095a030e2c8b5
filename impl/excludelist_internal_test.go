package impl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExcludeListAddsWhatTheJavaAdds pins orchestrateStart's catch of ResourceUnavailableException
// (bhouse-nexthop/cloudstack@d4da80c56eac6a4b67d90f12045750fc5febba59, the 4.22 branch,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java: lastKnownError = e;
// if (!avoids.add(e)) rethrow) and DeploymentPlanner.ExcludeList.add(ResourceUnavailableException)
// (bhouse-nexthop/cloudstack@b34b9d916013e1fcedac395ef883e84660c1e1c3,
// api/src/main/java/com/cloud/deploy/DeploymentPlanner.java): a Host, Pod, DataCenter, Cluster or
// StoragePool scope is added and the start goes on to its next attempt, whatever threw the exception;
// any other scope is not, and the exception is rethrown. shouldAvoid(Host) checks the host's zone,
// pod and cluster as well as its id, so in the reference's one-zone world an avoided zone, pod,
// cluster or pool avoids every host. Until this test only an AgentUnavailableException's host was
// avoided; a Host-scoped ResourceUnavailableException of another origin ended the start, as did the
// zone of "Can't find at least one running router!".
func TestExcludeListAddsWhatTheJavaAdds(t *testing.T) {
	for _, c := range []struct {
		err     error
		added   bool
		avoided []string // of h1, h2
	}{
		{&AgentUnavailableError{Host: "h1", Reason: "Unable to start r-1"}, true, []string{"h1"}},
		{fmt.Errorf("wrapped: %w", &AgentUnavailableError{Host: "h2"}), true, []string{"h2"}},
		{&ResourceUnavailableError{Resource: "Host:h2", Reason: "Unable to send commands to virtual router"}, true, []string{"h2"}},
		{&ResourceUnavailableError{Resource: "DataCenter:1", Reason: "Can't find at least one running router!"}, true, []string{"h1", "h2"}},
		{&ResourceUnavailableError{Resource: "Pod:1", Reason: "pod"}, true, []string{"h1", "h2"}},
		{&ResourceUnavailableError{Resource: "Cluster:1", Reason: "cluster"}, true, []string{"h1", "h2"}},
		{&ResourceUnavailableError{Resource: "StoragePool:1", Reason: "pool"}, true, []string{"h1", "h2"}},
		{&ResourceUnavailableError{Resource: "Network:3", Reason: "Network is not yet fully implemented"}, false, nil},
		{runtimeErr("Unable to start r-1"), false, nil},
	} {
		e := newExcludeList()
		assert.Equal(t, c.added, e.add(c.err), "%v", c.err)
		var avoided []string
		for _, h := range []string{"h1", "h2"} {
			if e.shouldAvoid(h) {
				avoided = append(avoided, h)
			}
		}
		assert.Equal(t, c.avoided, avoided, "%v", c.err)
	}
}
