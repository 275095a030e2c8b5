package harness

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/model/history"
)

// numbered is n events numbered 1 to n.
func numbered(n int) (Events, []history.Event) {
	var es Events
	var want []history.Event
	for i := 1; i <= n; i++ {
		e := history.Event{Seq: int64(i), Kind: history.Log}
		es.add(e)
		want = append(want, e)
	}
	return es, want
}

// TestEventsReadAsOneSlice: a history in chunks reads as the slice it replaced, whole, from any
// position and backwards, at the chunks' edges too.
func TestEventsReadAsOneSlice(t *testing.T) {
	for _, n := range []int{0, 1, eventChunk - 1, eventChunk, eventChunk + 1, 3*eventChunk + 17} {
		es, want := numbered(n)
		require.Equal(t, n, es.Len())
		assert.Equal(t, want, es.Slice(), "n=%d", n)
		assert.Equal(t, want, slices.Collect(es.All()), "n=%d", n)
		assert.Equal(t, want, slices.Collect(es.snapshot().All()), "n=%d", n)
		rev := slices.Clone(want)
		slices.Reverse(rev)
		assert.Equal(t, rev, slices.Collect(es.Backward()), "n=%d", n)
		for _, from := range []int{-1, 0, 1, eventChunk - 1, eventChunk, eventChunk + 1, n - 1, n, n + 1} {
			var w []history.Event
			if lo := max(from, 0); lo < n {
				w = want[lo:]
			}
			assert.Equal(t, w, slices.Collect(es.From(from)), "n=%d from=%d", n, from)
		}
		for i := range n {
			require.Equal(t, int64(i+1), es.At(i).Seq)
		}
		assert.Panics(t, func() { es.At(n) })
	}
}

// TestEventsSnapshotStaysWhileRecording: a snapshot taken while events go on being recorded reads
// what it held and nothing after (run with -race: the recorder appends while readers read).
func TestEventsSnapshotStaysWhileRecording(t *testing.T) {
	r := NewRecorder(nil)
	r.Emit(history.Event{Kind: history.Log, Time: sim.Epoch})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 * eventChunk {
			r.Emit(history.Event{Kind: history.Log, Time: sim.Epoch})
		}
	}()
	for range 200 {
		snap := r.History()
		n := 0
		for e := range snap.All() {
			n++
			require.Equal(t, int64(n), e.Seq)
		}
		require.Equal(t, snap.Len(), n)
	}
	wg.Wait()
	assert.Equal(t, 3*eventChunk+1, r.History().Len())
}
