package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
)

// An until: condition is met by the history, not by a poll: seed-000-stuck-network under
// cloudstack-4.22, seed 7, implements net1 for 10 ms at 20:10 (D1's orphan cleanup writes Shutdown
// at once). Polling every 50 ms missed that Implementing and restarted the management server during
// a later one, 42 s on; the step now restarts it within one look (50 ms) of the first.
func TestUntilSeesAShortState(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/seed-000-stuck-network.yaml")
	r, err := RunScenario(sc, "cloudstack-4.22", nil, 7)
	require.NoError(t, err)
	var implementing, left, restart time.Time
	for e := range r.cluster.Rec.History().All() {
		switch {
		case e.Kind == history.State && e.Object == "network:1" && e.To == "Implementing" && e.Time.Sub(r.Started) > 15*time.Minute && implementing.IsZero():
			implementing = e.Time
		case e.Kind == history.State && e.Object == "network:1" && e.From == "Implementing" && !implementing.IsZero() && left.IsZero():
			left = e.Time
		case e.Kind == history.Fault && e.To == "ms-restart" && restart.IsZero():
			restart = e.Time
		}
	}
	require.False(t, implementing.IsZero() || left.IsZero() || restart.IsZero(), "the run no longer has the short Implementing or the restart")
	require.Less(t, left.Sub(implementing), 50*time.Millisecond, "the Implementing is no longer shorter than a look: the test no longer exercises the case")
	require.False(t, restart.Before(implementing))
	require.LessOrEqual(t, restart.Sub(implementing), 50*time.Millisecond, "the until: step missed the short Implementing")
}
