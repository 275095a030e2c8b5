package harness

import (
	"testing"
	"time"

	"github.com/csconform/csconform/model/network"
	"github.com/stretchr/testify/require"
)

// A network that is Implementing for 10 ms only, between two 50 ms polls: an `until: implementing`
// step must see it and go on at the instant it began, not at the next poll (there is none that
// falls inside it) nor an hour later.
func TestUntilCatchesAStateShorterThanAPoll(t *testing.T) {
	c, err := NewSimCluster(Options{Seed: 1, Hosts: []string{"h1"}, Defects: map[string]bool{}})
	require.NoError(t, err)
	defer c.Close()
	var waitErr error
	var start, woke, began time.Time
	done := false
	c.Go("scenario", func() {
		require.NoError(t, c.CreateNetwork("setup", "n1", false))
		id, err := c.NetworkID("n1")
		require.NoError(t, err)
		c.Go("flip", func() {
			c.Sleep(20 * time.Millisecond)
			began = c.Now()
			c.DB.UpdateNetworkState("flip", c.DB.Network(id), network.Implementing, "test", true)
			c.Sleep(10 * time.Millisecond)
			c.DB.UpdateNetworkState("flip", c.DB.Network(id), network.Implemented, "test", true)
		})
		start = c.Now()
		waitErr = c.waitUntil(Step{Until: "implementing", Network: "n1"}, false)
		woke = c.Now()
		done = true
	})
	require.NoError(t, c.Sched.RunUntil(c.Now().Add(2*time.Hour), func() bool { return done }))
	require.True(t, done)
	require.NoError(t, waitErr)
	require.Equal(t, began, woke, "the wait went on %s after the wait began, the state began after %s", woke.Sub(start), began.Sub(start))
}
