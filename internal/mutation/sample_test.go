package mutation

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/internal/tier"
)

// RunSample on a tiny module whose binary is its own oracle: every mutant is built with the overlay,
// judged, witnessed by its unit test, and a mutant that never ends is reported hung, not killed.
func TestRunSampleJudgesEachMutant(t *testing.T) {
	tier.Need(t, tier.Long) // builds a module once per mutant
	root, err := filepath.Abs("testdata/mod")
	require.NoError(t, err)
	all, err := Enumerate([]string{filepath.Join(root, "race.go")}, Options{})
	require.NoError(t, err)
	s, err := RunSample(SampleOptions{Root: root, Files: []string{"race.go"}, N: len(all), Seed: 3, Main: ".",
		Oracle: []string{"oracle"}, Witness: []string{"."}, Bound: 3 * time.Second, Work: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, len(all), s.Points)
	require.Equal(t, len(all), len(s.Results)+s.Stillborn)
	fates := map[string]Fate{}
	witnessed := map[string]bool{}
	for _, r := range s.Results {
		fates[r.Orig+" => "+r.Repl] = r.Fate
		witnessed[r.Orig+" => "+r.Repl] = *r.Witness
		require.Equal(t, "race.go", r.File)
		require.Equal(t, "Free", r.Func)
	}
	require.Equal(t, Hung, fates["free++ => "], "the loop never ends: no verdict, and not a kill")
	require.Equal(t, Killed, fates["n > 100 => !(n > 100)"], "4 is refused: the oracle sees it")
	require.True(t, witnessed["n > 100 => !(n > 100)"], "and so does the unit test")
	require.Equal(t, Survived, fates["> => >="], "n = 100 is neither the oracle's case nor the test's")
	require.False(t, witnessed["> => >="])
	f := s.Figure()
	require.Equal(t, len(s.Results), f.Judged)
	require.Equal(t, 1, f.Hung)
}
