package harness

import (
	"iter"

	"github.com/csconform/csconform/model/history"
)

// eventChunk is how many events one chunk of a recorded history holds (about 180 KB): the size of the
// first array the single slice this replaced grew to, so a short run allocates what it did.
const eventChunk = 1024

// Events is a recorded history, or a prefix of one, in chunks of eventChunk events that are written
// once and never copied or moved. One slice grown by doubling copied each event about twice over a big
// cloud's day (6% of a 200-host run's CPU, with the write barrier on during a collection), and its
// empty tail, as large as what it held at worst, raised the heap the collector aimed at.
//
// A value is a snapshot: events recorded after it was taken are not in it, and taking one copies
// nothing. It stays valid while the recorder goes on: a chunk's slice header is never rewritten and
// new events go past the snapshot's length.
type Events struct {
	chunks [][]history.Event
	n      int
}

// Len is the number of events.
func (es Events) Len() int { return es.n }

// At is the i-th event, 0 <= i < Len().
func (es Events) At(i int) *history.Event {
	if i < 0 || i >= es.n {
		panic("harness: Events.At out of range")
	}
	return &es.chunks[i/eventChunk][i%eventChunk]
}

// All yields the events in order.
func (es Events) All() iter.Seq[history.Event] { return es.From(0) }

// From yields the events from the i-th on, in order.
func (es Events) From(i int) iter.Seq[history.Event] {
	return func(yield func(history.Event) bool) {
		for i := max(i, 0); i < es.n; {
			c := es.chunks[i/eventChunk][i%eventChunk : min(es.n-i/eventChunk*eventChunk, eventChunk)]
			for _, e := range c {
				if !yield(e) {
					return
				}
			}
			i += len(c)
		}
	}
}

// Backward yields the events from the last to the first.
func (es Events) Backward() iter.Seq[history.Event] {
	return func(yield func(history.Event) bool) {
		for i := es.n - 1; i >= 0; i-- {
			if !yield(es.chunks[i/eventChunk][i%eventChunk]) {
				return
			}
		}
	}
}

// Slice is the events in one slice of their own (nil when there are none).
func (es Events) Slice() []history.Event {
	if es.n == 0 {
		return nil
	}
	out := make([]history.Event, 0, es.n)
	for e := range es.All() {
		out = append(out, e)
	}
	return out
}

// add appends e; its caller holds the recorder's lock.
func (es *Events) add(e history.Event) {
	if es.n == len(es.chunks)*eventChunk {
		es.chunks = append(es.chunks, make([]history.Event, eventChunk))
	}
	es.chunks[es.n/eventChunk][es.n%eventChunk] = e
	es.n++
}

// snapshot is es as it is now, for readers outside the recorder's lock.
func (es *Events) snapshot() Events {
	return Events{chunks: es.chunks[:len(es.chunks):len(es.chunks)], n: es.n}
}
