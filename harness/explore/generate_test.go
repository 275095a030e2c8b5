package explore

import (
	"slices"
	"testing"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/world"
	"github.com/csconform/csconform/impl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigDrawsAreLegal: each drawn key starts with CloudStack's default (where a shrink goes) and
// every value is one Config.Set accepts.
func TestConfigDrawsAreLegal(t *testing.T) {
	for _, d := range configDraws {
		k, ok := impl.LookupConfigKey(d.key)
		require.True(t, ok, d.key)
		assert.Equal(t, k.Default, d.values[0], "%s: the default first", d.key)
		for _, v := range d.values {
			_, err := impl.NewConfig(map[string]string{d.key: v})
			assert.NoError(t, err)
		}
	}
}

// TestProgramsStayWithinReach: a world's reach bounds the faults drawn, and across programs the swarm
// leaves kinds out, draws settings, NICs on several networks and restarts with a start in flight.
func TestProgramsStayWithinReach(t *testing.T) {
	reach := Reach{AgedNetworks: true, Faults: map[string]bool{"crash": true, "ms-restart": true, "stale-report": true}}
	draw := programOf(reach)
	seen := map[string]int{}
	for s := uint64(1); s <= 300; s++ {
		sc := draw(s)
		require.NoError(t, sc.Validate())
		for _, st := range sc.Steps {
			if st.Fault != "" {
				assert.True(t, reach.Faults[st.Fault], "seed %d draws %s", s, st.Fault)
			}
		}
		for _, f := range Features(sc) {
			seen[f]++
		}
		if len(sc.Config) > 1 {
			seen["tuned"]++
		}
	}
	for _, f := range []string{"deploy:multi-nic", "fault:ms-restart", "fault:crash", "fault:stale-report", "tuned", "networks:3"} {
		assert.Positive(t, seen[f], "no program has %s", f)
	}
	// a swarm leaves whole kinds out: some programs deploy and stop without any fault
	assert.Less(t, seen["fault:crash"], 300)
	assert.Zero(t, seen["deploy:ha"], "a world without HA gets no HA-enabled VM")
}

// The simulator's programs draw HA VMs and the host states of the investigation (issue 12): a host
// powered off, unreachable, or with its storage heartbeat failing.
func TestProgramsDrawHAAndHostStates(t *testing.T) {
	draw := programOf(Everything)
	seen := map[string]int{}
	for s := uint64(1); s <= 300; s++ {
		sc := draw(s)
		require.NoError(t, sc.Validate())
		for _, f := range Features(sc) {
			seen[f]++
		}
	}
	for _, f := range []string{"deploy:ha", "fault:host-power-off", "fault:host-unreachable", "fault:heartbeat-fail"} {
		assert.Positive(t, seen[f], "no program has %s", f)
	}
	assert.Zero(t, seen["fault:host-remove"], "a removed host stays gone: not drawn")
}

// A world's reach is read from its declared capabilities: the simulator draws everything, containers
// what the container world accepts (pinned here: a change of the declaration changes the programs
// the container tier runs), and no reach draws a fault its world cannot apply.
func TestReachReadsTheCapabilities(t *testing.T) {
	require.Equal(t, Reach{AgedNetworks: true, HA: true}, Everything)
	require.Equal(t, Reach{AgedNetworks: true, Faults: map[string]bool{"crash": true, "guest-shutdown": true,
		"agent-restart": true, "agent-kill": true, "disconnect": true, "stale-report": true, "ms-restart": true,
		"slow-router-boot": true, "backdate": true}}, ContainerReach)
	for _, w := range world.Names {
		c, err := world.CapabilitiesOf(w)
		require.NoError(t, err)
		r := ReachOf(c, true)
		for _, f := range r.only(append(slices.Clone(soloFaults), hostFaults...)) {
			require.True(t, c.Can(harness.FaultCap(f)), "%s draws %s", w, f)
		}
		require.Equal(t, c.Can(harness.HAVMs), r.HA, w)
		require.Equal(t, c.Can(harness.PeerServers), r.Peers, w)
	}
}
