package scalebench

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/harness"
)

func TestScenario(t *testing.T) {
	sc, err := Scenario(Options{Hosts: 3, VMsPerHost: 4, VMsPerNetwork: 5, Duration: time.Hour})
	require.NoError(t, err)
	require.Len(t, sc.Hosts, 3)
	require.Len(t, sc.Networks, 3) // 12 VMs, 5 a network
	require.Len(t, sc.Steps, 12)
	require.Equal(t, "h3", sc.Steps[11].Host)
	require.Equal(t, 10*time.Second, sc.Steps[4].Wait) // the second host's first deploy
	require.Equal(t, time.Hour-30*time.Second, sc.Settle)

	for _, bad := range []Options{{Hosts: 0}, {Hosts: 1, VMsPerHost: -1}, {Hosts: 1, VMsPerNetwork: 40}, {Hosts: 1, Duration: 100 * time.Hour}, {Hosts: harness.MaxScenarioHosts + 1}, {Hosts: 100, VMsPerHost: harness.MaxScenarioVMs/100 + 1}} {
		_, err := Scenario(bad)
		require.Error(t, err, "%+v", bad)
	}
}

// TestScenarioRuns: a small generated cloud runs clean under fixed.
func TestScenarioRuns(t *testing.T) {
	sc, err := Scenario(Options{Hosts: 2, VMsPerHost: 3, Duration: 30 * time.Minute})
	require.NoError(t, err)
	res, err := harness.RunScenario(sc, "fixed", nil, sc.Seed)
	require.NoError(t, err)
	require.Empty(t, res.Violations)
	require.Empty(t, res.Mismatches)
}

// BenchmarkScale: a generated cloud of N hosts x 20 VMs deployed and run for an hour of simulated
// time (csconform bench --scale runs the day and prints the growth between sizes).
func BenchmarkScale(b *testing.B) {
	for _, hosts := range []int{10, 50} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			sc, err := Scenario(Options{Hosts: hosts, Duration: time.Hour})
			require.NoError(b, err)
			for b.Loop() {
				res, err := harness.RunScenario(sc, "fixed", nil, sc.Seed)
				require.NoError(b, err)
				b.ReportMetric(float64(res.Steps), "steps/op")
			}
		})
	}
}
