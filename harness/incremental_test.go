package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
)

// TestCompareModeOnBuiltinScenarios: every built-in scenario, under both profiles, checked
// incrementally and in full after every step, with the same outcome.
func TestCompareModeOnBuiltinScenarios(t *testing.T) {
	tier.Need(t, tier.Long) // every scenario, checked twice after every step
	t.Setenv(CheckModeEnv, "compare")
	for _, sc := range builtinScenarios(t) {
		for _, p := range []string{"cloudstack-4.22", "fixed"} {
			_, err := RunScenario(sc, p, nil, sc.Seed)
			require.NoError(t, err, "%s under %s", sc.Name, p)
		}
	}
}

// TestCompareModeCatchesAMissedChange: an incremental checker that misses the store's writes (a
// planted bug: they are drained before it looks) is caught by compare mode; the intact one is not.
func TestCompareModeCatchesAMissedChange(t *testing.T) {
	t.Setenv(CheckModeEnv, "compare")
	for _, plant := range []bool{false, true} {
		c, err := NewSimCluster(Options{Seed: 1, Hosts: []string{"h1", "h2"}, Defects: impl.Switches{}})
		require.NoError(t, err)
		if plant {
			check := c.sim().sched.AfterStep
			c.sim().sched.AfterStep = func() { c.DB.TakeChanges(); check() }
		}
		c.Go("client", func() {
			require.NoError(t, c.CreateNetwork("client", "net1", false))
			require.NoError(t, c.Deploy("client", "web1", []string{"net1"}, "h1"))
		})
		require.NoError(t, c.sim().sched.RunFor(5*time.Minute))
		if plant {
			require.Contains(t, c.CheckMismatch(), "the full one")
		} else {
			require.Empty(t, c.CheckMismatch())
		}
		c.Close()
	}
}

func TestCheckModeEnv(t *testing.T) {
	t.Setenv(CheckModeEnv, "sometimes")
	_, err := NewSimCluster(Options{Hosts: []string{"h1"}})
	require.ErrorContains(t, err, CheckModeEnv+" wants incremental, full or compare")
}
