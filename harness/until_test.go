package harness

import (
	"strings"
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

// until: log holds a step back until the server writes a line containing the text (about the VM the
// step names): here the start is called within one look (50 ms) of the stop's "is stopped on the
// host", whatever the seed; a line written before the step began does not count, and a log
// condition without a line, or in a world without the server's log, is refused before the run.
func TestUntilLogWaitsForTheLine(t *testing.T) {
	const file = `
name: until-log
hosts: [h1]
networks: [{name: net1}]
steps:
  - {op: deploy, vm: web1, networks: [net1], host: h1}
  - {op: stop, vm: web1, async: true}
  - {until: log, vm: web1, line: "is stopped on the host", case: start, op: start, host: h1}
`
	sc, err := ParseScenario([]byte(file), "until-log.yaml")
	require.NoError(t, err)
	for seed := uint64(1); seed <= 3; seed++ {
		r, err := RunScenario(sc, "fixed", nil, seed)
		require.NoError(t, err)
		var stopped, called time.Time
		for e := range r.cluster.Rec.History().All() {
			switch {
			case e.Kind == history.Log && strings.Contains(e.Detail, "is stopped on the host") && stopped.IsZero():
				stopped = e.Time
			case e.Kind == history.Call && strings.HasPrefix(e.Detail, "start web1"):
				called = e.Time
			}
		}
		require.False(t, stopped.IsZero() || called.IsZero(), "seed %d: no stop line or no start call", seed)
		require.False(t, called.Before(stopped), "seed %d: the start was called before the line", seed)
		require.LessOrEqual(t, called.Sub(stopped), 50*time.Millisecond, "seed %d", seed)
	}

	_, err = ParseScenario([]byte(strings.Replace(file, `line: "is stopped on the host", `, "", 1)), "until-log.yaml")
	require.ErrorContains(t, err, "until log needs a line")
	require.True(t, SimCapabilities.Can(ServerLog))
	require.Contains(t, strings.Join(Capabilities{World: "outside", Lacks: map[Capability]string{ServerLog: WhyNoServerLog}}.Refusals(sc), "\n"), "step 3 (until log) cannot run outside")
}
