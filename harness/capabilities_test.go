package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The refusals a world makes at run time are its declaration's.
func TestCapabilitiesRefuseAtRunTime(t *testing.T) {
	c := &Cluster{w: &liveWorld{}, HostIDs: []string{"h1"}}
	assert.Equal(t, LiveCapabilities.Refusal(FaultCap("heartbeat-fail")), c.Heartbeat("h1", false))
}
