package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/stretchr/testify/require"
)

// lostUpdate is the planted check-then-act race: two tasks due at the same instant each read a
// counter and write it back plus one, with a scheduling point before the read and before the write
// (as impl's DB has them) and no sleep between. Only a preemption between one task's read and its
// write loses an update. It returns the counter, the virtual time the tasks ended at and the order
// of their operations.
func lostUpdate(seed uint64, st Strategy) (int, time.Duration, string) {
	s := NewScheduler(seed)
	s.UseStrategy(st)
	defer s.Close()
	n := 0
	var ops []string
	var end time.Duration
	for _, name := range []string{"a", "b"} {
		s.Go(name, func() {
			s.Point(impl.PointRead)
			v := n
			ops = append(ops, name+"r")
			s.Point(impl.PointWrite)
			n = v + 1
			ops = append(ops, name+"w")
			end = s.Now().Sub(Epoch)
		})
	}
	if err := s.RunFor(time.Second); err != nil {
		panic(err)
	}
	return n, end, strings.Join(ops, " ")
}

func TestRandomNeverPreemptsAtAPoint(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		n, _, ops := lostUpdate(seed, Strategy{})
		require.Equal(t, 2, n, "seed %d: %s", seed, ops)
	}
}

// Under PCT with depth 2 over a horizon of 4 points, the one change point falls on the first task's
// write point with probability 1/4: it is preempted there, the other task runs whole, and the first
// writes back its stale read. Without change points (depth 1) the highest-priority task runs whole.
func TestPCTFindsTheLostUpdate(t *testing.T) {
	cases := []struct {
		st       Strategy
		min, max int // how many of 200 seeds lose the update
	}{
		{Strategy{Kind: PCT, Depth: 1, Horizon: 4}, 0, 0},
		{Strategy{Kind: PCT, Depth: 2, Horizon: 4}, 20, 80},
	}
	for _, c := range cases {
		t.Run(c.st.String(), func(t *testing.T) {
			lost := 0
			for seed := uint64(0); seed < 200; seed++ {
				n, end, _ := lostUpdate(seed, c.st)
				require.Zero(t, end, "a preemption must not advance virtual time")
				if n == 1 {
					lost++
				}
			}
			require.GreaterOrEqual(t, lost, c.min)
			require.LessOrEqual(t, lost, c.max)
		})
	}
}

func TestPCTSameSeedSameSchedule(t *testing.T) {
	st := Strategy{Kind: PCT, Depth: 3, Horizon: 4}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		_, _, a := lostUpdate(seed, st)
		_, _, b := lostUpdate(seed, st)
		require.Equal(t, a, b, "seed %d", seed)
		seen[a] = true
	}
	require.Greater(t, len(seen), 2, "seeds should choose different interleavings")
}

// The sleeping/waiting trace keeps its determinism under PCT too.
func TestPCTTraceReplays(t *testing.T) {
	for seed := uint64(1); seed < 10; seed++ {
		run := func() string {
			s := NewScheduler(seed)
			s.UseStrategy(Strategy{Kind: PCT})
			defer s.Close()
			var out []string
			for i := 0; i < 3; i++ {
				name := fmt.Sprintf("t%d", i)
				s.Go(name, func() {
					for j := 0; j < 3; j++ {
						s.Point(impl.PointWrite)
						out = append(out, fmt.Sprintf("%s@%s", name, s.Now().Sub(Epoch)))
						s.Sleep(time.Second)
					}
				})
			}
			if err := s.RunFor(time.Minute); err != nil {
				panic(err)
			}
			return strings.Join(out, " ")
		}
		require.Equal(t, run(), run())
	}
}

func TestParseStrategy(t *testing.T) {
	cases := []struct {
		in   string
		want Strategy
		err  string
	}{
		{"", Strategy{}, ""},
		{"random", Strategy{}, ""},
		{"pct", Strategy{Kind: PCT}, ""},
		{"pct:5", Strategy{Kind: PCT, Depth: 5}, ""},
		{"pct:0", Strategy{}, "depth must be"},
		{"pct:x", Strategy{}, "depth must be"},
		{"random:2", Strategy{}, "takes no depth"},
		{"coyote", Strategy{}, "unknown scheduler"},
	}
	for _, c := range cases {
		got, err := ParseStrategy(c.in)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	require.Equal(t, "pct:8", Strategy{Kind: PCT}.String())
	require.Equal(t, "random", Strategy{}.String())
}

// BenchmarkStep is the scheduler's hot path: eight tasks that each pass two scheduling points and
// sleep, under both strategies (compare ns/op and allocs/op side by side).
func BenchmarkStep(b *testing.B) {
	for _, st := range []Strategy{{}, {Kind: PCT}} {
		b.Run(st.String(), func(b *testing.B) {
			s := NewScheduler(1)
			s.UseStrategy(st)
			defer s.Close()
			for i := 0; i < 8; i++ {
				s.Go(fmt.Sprintf("t%d", i), func() {
					for {
						s.Point(impl.PointRead)
						s.Point(impl.PointWrite)
						s.Sleep(time.Millisecond)
					}
				})
			}
			s.MaxSteps = uint64(b.N)
			b.ReportAllocs()
			b.ResetTimer()
			_ = s.RunFor(1000 * time.Hour)
			b.StopTimer()
			b.ReportMetric(float64(s.Preemptions())/float64(b.N), "preemptions/op")
		})
	}
}
