package harness

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
)

// An operator's forced deleteHost taken by a server that does not own the host is not carried out
// there: ResourceManagerImpl.deleteHost calls propagateResourceEvent(hostId, DeleteHost), which sends
// the event to the owner named by host.mgmt_server_id; the owner's executeUserRequest runs
// doDeleteHost(hostId, false, false) — isForced false — and doDeleteHost refuses a host whose
// resource state is neither Maintenance nor Degraded ("cannot be deleted as it is not in maintenance
// mode"), so deleteHost returns false (apache/cloudstack 0115b87ebb85c67f8b1e8177a86004a66112de75,
// server/src/main/java/com/cloud/resource/ResourceManagerImpl.java: deleteHost, propagateResourceEvent,
// getPeerName, executeUserRequest, doDeleteHost, canDeleteHost). Finding H: the reference removed h2
// on ms1's side and left ms2's attache to it, so ms2's starts sent their commands to a removed host
// and a router stayed Starting behind a StartCommand that waited twice `wait`.
func TestDeleteHostOfAPeersHostIsPropagatedToTheOwner(t *testing.T) {
	for _, c := range []struct {
		host    string
		removed bool
	}{
		{"h2", false}, // owned by ms2: propagated, refused (not in maintenance)
		{"h1", true},  // owned by ms1, which takes the call: deleted (forced)
	} {
		t.Run(c.host, func(t *testing.T) {
			sc, err := ParseScenario([]byte(`name: peer-delete-`+c.host+`
managementServers: 2
lenient: true
hosts: [h1, h2]
steps:
  - {fault: host-remove, host: `+c.host+`, async: true}
expect:
  fixed:
    violations: []
`), "inline")
			require.NoError(t, err)
			r, err := RunScenario(sc, "fixed", nil, 0)
			require.NoError(t, err)
			var removed, propagated bool
			for e := range r.cluster.Rec.History().All() {
				switch {
				case e.Kind == history.State && e.Object == "host:"+c.host && e.To == "Removed":
					removed = true
				case e.Kind == history.Log && strings.HasPrefix(e.Detail, "Propagating resource request event:DeleteHost"):
					propagated = true
					assert.False(t, strings.HasPrefix(e.Actor, "ms2:"), "the propagation is ms1's: %s", e.Actor)
				}
			}
			assert.Equal(t, c.removed, removed, "host %s removed", c.host)
			assert.Equal(t, !c.removed, propagated, "deleteHost of %s propagated", c.host)
		})
	}
}
