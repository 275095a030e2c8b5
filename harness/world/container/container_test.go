package container

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/harness"
)

// The container world's hosts are containers on one machine: what it cannot do to them it refuses at
// run time in its declaration's words.
func TestHostFaultsRefusedInContainers(t *testing.T) {
	w := &containerWorld{}
	assert.Equal(t, Capabilities.Refusal(harness.FaultCap("host-power-off")), w.HostPower("h1", false))
	for _, err := range []error{w.RemoveHost("h1"), w.Heartbeat("h1", false), w.PeerStop("ms2")} {
		assert.ErrorContains(t, err, "is not available in containers")
	}
}

// The linearizability check runs where the world gives Run its bounds, as it declares.
func TestLinearizabilityAsDeclared(t *testing.T) {
	_, ok := (&containerRun{}).LinearBounds()
	assert.Equal(t, ok, Capabilities.Runs(harness.Linearizability))
}
