package explore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
)

// RunBudget counts every case it runs into the summary, tells seen of each in turn, and gives the
// coverage; chunk 0's seed is the run's own, so --seed N --budget 1 replays case N.
func TestRunBudget(t *testing.T) {
	assert.Equal(t, uint64(42), ChunkSeed(42, 0))
	assert.NotEqual(t, ChunkSeed(42, 1), ChunkSeed(42, 2))
	for _, tc := range []struct {
		name string
		i, n int
	}{{"whole", 0, 1}, {"a shard", 1, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []int
			sum := &Summary{}
			o := Options{Profile: impl.Fixed, Defects: impl.Switches{}, Detectors: Both, Guide: NewGuide()}
			require.NoError(t, RunBudget(o, 3, 7, tc.i, tc.n, sum, func(done int) { seen = append(seen, done) }))
			if !sum.Found {
				assert.Equal(t, 3, sum.Cases)
			}
			assert.Equal(t, seen[len(seen)-1], len(seen))
			assert.NotNil(t, sum.Last)
			assert.NotNil(t, sum.Coverage)
			assert.False(t, sum.Interrupted)
		})
	}
}
