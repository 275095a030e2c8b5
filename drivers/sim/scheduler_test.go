package sim

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// trace runs three tasks that sleep and wait on each other and returns the order they ran in.
func trace(seed uint64) string {
	s := NewScheduler(seed)
	defer s.Close()
	var out []string
	sig := s.NewSignal()
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("t%d", i)
		s.Go(name, func() {
			for j := 0; j < 3; j++ {
				out = append(out, fmt.Sprintf("%s@%s", name, s.Now().Sub(Epoch)))
				s.Sleep(time.Second)
			}
			if name == "t0" {
				sig.Fire()
			} else {
				sig.Wait(0)
				out = append(out, name+" woke")
			}
		})
	}
	if err := s.RunFor(time.Minute); err != nil {
		panic(err)
	}
	return strings.Join(out, " ")
}

func TestSameSeedSameSchedule(t *testing.T) {
	for seed := uint64(1); seed < 20; seed++ {
		if a, b := trace(seed), trace(seed); a != b {
			t.Fatalf("seed %d: %q != %q", seed, a, b)
		}
	}
}

func TestSeedsChooseDifferentInterleavings(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed < 20; seed++ {
		seen[trace(seed)] = true
	}
	if len(seen) < 2 {
		t.Fatal("every seed gave the same interleaving: ties are not broken by the seed")
	}
}

func TestSignalTimeoutAndFire(t *testing.T) {
	cases := []struct {
		name    string
		fireAt  time.Duration // 0 = never
		timeout time.Duration
		want    bool
		wantAt  time.Duration
	}{
		{"fired before timeout", 2 * time.Second, 5 * time.Second, true, 2 * time.Second},
		{"timed out", 0, 5 * time.Second, false, 5 * time.Second},
		{"fired after timeout", 9 * time.Second, 5 * time.Second, false, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewScheduler(1)
			defer s.Close()
			g := s.NewSignal()
			var got bool
			var at time.Duration
			s.Go("waiter", func() { got = g.Wait(c.timeout); at = s.Now().Sub(Epoch) })
			if c.fireAt > 0 {
				s.After(c.fireAt, g.Fire)
			}
			if err := s.RunFor(time.Minute); err != nil {
				t.Fatal(err)
			}
			if got != c.want || at != c.wantAt {
				t.Fatalf("Wait = %v at %s, want %v at %s", got, at, c.want, c.wantAt)
			}
		})
	}
}

func TestKillEndsOnlyThePrefix(t *testing.T) {
	s := NewScheduler(1)
	defer s.Close()
	ticks := map[string]int{}
	for _, n := range []string{"ms/gc", "agent/h1/ping"} {
		s.Go(n, func() {
			for {
				ticks[n]++
				s.Sleep(time.Second)
			}
		})
	}
	s.RunFor(10 * time.Second)
	s.Kill("ms/")
	before := ticks["ms/gc"]
	s.RunFor(10 * time.Second)
	if ticks["ms/gc"] != before {
		t.Fatalf("killed task ran on: %d → %d", before, ticks["ms/gc"])
	}
	if ticks["agent/h1/ping"] < 19 {
		t.Fatalf("the other task stopped too: %d ticks", ticks["agent/h1/ping"])
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		s := NewScheduler(uint64(i))
		g := s.NewSignal()
		s.Go("forever", func() { g.Wait(0) })
		s.Go("loop", func() {
			for {
				s.Sleep(time.Second)
			}
		})
		s.RunFor(time.Minute)
		s.Close()
	}
	runtime.GC()
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Fatalf("%d goroutines before, %d after closing 50 schedulers", before, after)
	}
}

func TestTaskPanicIsReported(t *testing.T) {
	s := NewScheduler(1)
	defer s.Close()
	s.Go("bad", func() { panic("boom") })
	err := s.RunFor(time.Second)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want the task's panic", err)
	}
}

// A task that never parks for long (a zero interval) is stopped at the bound of steps and by an
// interruption between two steps; the schedule up to the stop is the uninterrupted one.
func TestRunUntilStopsAtItsBoundAndWhenInterrupted(t *testing.T) {
	spin := func(s *Scheduler) {
		s.Go("spin", func() {
			for {
				s.Sleep(0)
			}
		})
	}
	s := NewScheduler(1)
	s.MaxSteps = 1000
	spin(s)
	err := s.RunFor(time.Hour)
	var lim *LimitError
	if !errors.As(err, &lim) || s.Steps() != 1000 {
		t.Fatalf("RunFor = %v after %d steps, want a LimitError after 1000", err, s.Steps())
	}
	s.Close()

	stop := errors.New("interrupted")
	s = NewScheduler(1)
	calls := 0
	s.Interrupted = func() error {
		if calls++; calls == 3 {
			return stop
		}
		return nil
	}
	spin(s)
	if err := s.RunFor(time.Hour); !errors.Is(err, stop) || s.Steps() != 2*interruptEvery {
		t.Fatalf("RunFor = %v after %d steps, want the interruption after %d", err, s.Steps(), 2*interruptEvery)
	}
	s.Close()
}
