package sim

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/csconform/csconform/impl"
)

// TestWakeQueuePopsInKeyOrder: the queue pops wake-ups in (at, tie, seq) order, as the container/heap
// queue before it did, under any interleaving of pushes and pops: the schedule depends on nothing else.
func TestWakeQueuePopsInKeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q wakeQueue
		var ref []*wakeup // what is queued, kept sorted by the key
		key := func(a, b *wakeup) int {
			switch {
			case !a.at.Equal(b.at):
				return a.at.Compare(b.at)
			case a.tie != b.tie:
				if a.tie < b.tie {
					return -1
				}
				return 1
			}
			return int(a.seq) - int(b.seq)
		}
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "ops"); i < n; i++ {
			if len(ref) > 0 && rapid.IntRange(0, 2).Draw(t, "pop") == 0 {
				got, want := q.pop(), ref[0]
				ref = ref[1:]
				if got != want {
					t.Fatalf("op %d: popped seq %d, want seq %d", i, got.seq, want.seq)
				}
				continue
			}
			w := &wakeup{at: Epoch.Add(time.Duration(rapid.IntRange(0, 5).Draw(t, "at")) * time.Second),
				tie: uint64(rapid.IntRange(0, 3).Draw(t, "tie")), seq: uint64(i)}
			q.push(w)
			j, _ := slices.BinarySearchFunc(ref, w, key)
			ref = slices.Insert(ref, j, w)
			if q.peek() != ref[0] {
				t.Fatalf("op %d: the head is seq %d, want seq %d", i, q.peek().seq, ref[0].seq)
			}
		}
	})
}

// TestMsgQueueIsFIFO: a message queue hands messages out in the order they went in, under any
// interleaving of pushes and pops, and holds no message it has handed out.
func TestMsgQueueIsFIFO(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q msgQueue
		var ref []int64
		next := int64(1)
		for i, n := 0, rapid.IntRange(1, 300).Draw(t, "ops"); i < n; i++ {
			if len(ref) > 0 && rapid.IntRange(0, 2).Draw(t, "pop") == 0 {
				if got := q.pop().Seq; got != ref[0] {
					t.Fatalf("popped %d, want %d", got, ref[0])
				}
				ref = ref[1:]
			} else {
				q.push(impl.Message{Seq: next, Kind: impl.MsgPing})
				ref = append(ref, next)
				next++
			}
			if q.len() != len(ref) {
				t.Fatalf("len %d, want %d", q.len(), len(ref))
			}
			for j, m := range q.buf {
				if (j < q.head) != (m.Kind == "") {
					t.Fatalf("slot %d (head %d) holds %+v", j, q.head, m)
				}
			}
		}
	})
}
