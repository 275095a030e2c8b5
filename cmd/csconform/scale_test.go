package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/harness"
)

func TestScaleCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"scenarios", "scale", "--hosts", "2", "--vms-per-host", "3", "--duration", "1h"}, &out, &errOut), errOut.String())
	sc, err := harness.ParseScenario(out.Bytes(), "generated")
	require.NoError(t, err, "the generated file reads back")
	require.Len(t, sc.Steps, 6)

	for _, args := range [][]string{
		{"scenarios", "scale", "--hosts", "0"},
		{"scenarios", "scale", "extra"},
		{"bench", "--scale", "10,x"},
		{"bench", "--scale", "10", "--vms-per-network", "99"},
		{"bench", "extra"},
	} {
		out.Reset()
		errOut.Reset()
		require.Equal(t, exitBadInput, run(args, &out, &errOut), "%v", args)
		require.NotEmpty(t, errOut.String(), "%v", args)
	}
}

// TestScaleRunWritesProfiles: one size's run writes the CPU and allocation profiles it is given, and
// says so when it cannot.
func TestScaleRunWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu"), filepath.Join(dir, "mem")
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"bench", "--scale-run", "2", "--vms-per-host", "2", "--duration", "10m", "--cpuprofile", cpu, "--memprofile", mem}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), `"hosts":2`)
	for _, f := range []string{cpu, mem} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.NotZero(t, st.Size(), f)
	}
	errOut.Reset()
	require.Equal(t, exitBadInput, run([]string{"bench", "--scale-run", "2", "--vms-per-host", "2", "--duration", "10m", "--memprofile", filepath.Join(dir, "no", "such")}, &out, &errOut))
	require.Contains(t, errOut.String(), "no such file")
}

// TestScaleRunOfTheLongestDuration: a cloud run for the longest duration the generator takes, 48 h,
// finishes: its deploys' minutes on top of that once passed the run's default bound.
func TestScaleRunOfTheLongestDuration(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run([]string{"bench", "--scale-run", "2", "--vms-per-host", "2", "--duration", "48h"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), `"hosts":2`)
}

// TestMedianRatioPairsRounds: the growth between two sizes is the median of each round's ratio, not
// the ratio of the medians, so a slow round inflates neither size alone.
func TestMedianRatioPairsRounds(t *testing.T) {
	runs := func(secs ...float64) (out []scaleRun) {
		for _, s := range secs {
			out = append(out, scaleRun{Wall: time.Duration(s * float64(time.Second))})
		}
		return out
	}
	wall := func(r scaleRun) time.Duration { return r.Wall }
	for _, c := range []struct {
		name string
		a, b []scaleRun
		want float64
	}{
		{"one round", runs(4), runs(2), 2},
		{"a slow round falls on both sizes", runs(4, 8, 4.2), runs(2, 4, 2), 2},
		{"even rounds average the middle two", runs(4, 6), runs(2, 2), 2.5},
		// the ratio of medians would say 3 (6/2): each slow spell is paired with the other size's run in it
		{"ratios, not medians", runs(4, 12, 6), runs(2, 6, 2), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.InDelta(t, c.want, medianRatio(c.a, c.b, wall), 1e-9)
		})
	}
}
