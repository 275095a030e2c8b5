package scalebench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMedianRatioPairsRounds: the growth between two sizes is the median of each round's ratio, not
// the ratio of the medians, so a slow round inflates neither size alone.
func TestMedianRatioPairsRounds(t *testing.T) {
	runs := func(secs ...float64) (out []Run) {
		for _, s := range secs {
			out = append(out, Run{Wall: time.Duration(s * float64(time.Second))})
		}
		return out
	}
	wall := func(r Run) time.Duration { return r.Wall }
	for _, c := range []struct {
		name string
		a, b []Run
		want float64
	}{
		{"one round", runs(4), runs(2), 2},
		{"a slow round falls on both sizes", runs(4, 8, 4.2), runs(2, 4, 2), 2},
		{"even rounds average the middle two", runs(4, 6), runs(2, 2), 2.5},
		// the ratio of medians would say 3 (6/2): each slow spell is paired with the other size's run in it
		{"ratios, not medians", runs(4, 12, 6), runs(2, 6, 2), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.InDelta(t, c.want, MedianRatio(c.a, c.b, wall), 1e-9)
		})
	}
}
