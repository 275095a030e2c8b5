package harness

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
)

// TestLogsDuringAnswersAsTheScan: finish reads each case's log lines through an index of each
// object's; on a history in time order it must find what the scan of the whole history found.
func TestLogsDuringAnswersAsTheScan(t *testing.T) {
	for _, f := range []string{"seed-000-boot-group", "network-gc-vs-start", "retry-waits-on-timed-out-start"} {
		sc := loadScenario(t, "../conformance/scenarios/"+f+".yaml")
		r, err := RunScenario(sc, "cloudstack-4.22", nil, sc.Seed)
		require.NoError(t, err)
		c := r.cluster
		scan := func(object string, from, end time.Time) []history.Event {
			var out []history.Event
			for e := range c.Rec.History().All() {
				if !e.Time.Before(from) && !e.Time.After(end) && e.Object == object && e.Kind == history.Log {
					out = append(out, e)
				}
			}
			return out
		}
		var objects []string
		for e := range c.Rec.History().All() {
			if e.Kind == history.Log && !slices.Contains(objects, e.Object) {
				objects = append(objects, e.Object)
			}
		}
		require.NotEmpty(t, c.Rec.Ops, f)
		found := 0
		for _, op := range c.Rec.Ops {
			end := op.Return
			if end.IsZero() {
				end = c.Now()
			}
			for _, o := range objects {
				want := scan(o, op.Call, end)
				require.Equal(t, want, c.logsDuring(o, op.Call, end), "%s: op %d, %s", f, op.ID, o)
				found += len(want)
			}
		}
		require.Positive(t, found, f)
	}
}
