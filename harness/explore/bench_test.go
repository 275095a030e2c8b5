package explore

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
)

// TimeToFind gives a figure a seed, each list sorted, for a defect and for a planted bug (a name
// impl.ParseDefects does not know, switched on alone).
func TestTimeToFind(t *testing.T) {
	for _, d := range []string{impl.D1.Name(), impl.PlantedIPFromStaleRead.Name()} {
		t.Run(d, func(t *testing.T) {
			var seen []int
			ft, err := TimeToFind(d, Options{Detectors: Both}, 2, 3, 0, func(s int) { seen = append(seen, s) })
			require.NoError(t, err)
			assert.Equal(t, []int{1, 2}, seen)
			assert.Len(t, ft.Cases, 2)
			assert.Len(t, ft.Secs, 2)
			assert.Len(t, ft.Shrunk, ft.Found)
			assert.LessOrEqual(t, ft.Own, ft.Found)
			assert.True(t, slices.IsSorted(ft.Cases) && slices.IsSorted(ft.Secs))
		})
	}
}
