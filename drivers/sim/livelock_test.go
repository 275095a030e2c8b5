package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A loop that waits without sleeping ends the run with a LivelockError, found by a count (of steps
// at one instant, or of one task's points without parking), so the same seed fails at the same step on
// every machine; the same loop with its sleep passes. Before, such a run hung until a wall clock
// stopped it (two mutants of the mechanical samples: a poll's and the job heartbeat's sleep deleted).
func TestLivelockIsAFinding(t *testing.T) {
	defer func(steps, spins uint64) { LivelockSteps, LivelockSpins = steps, spins }(LivelockSteps, LivelockSpins)
	LivelockSteps, LivelockSpins = 10_000, 10_000
	const noSleep = -1
	cases := []struct {
		name     string
		strategy string
		pollers  int           // tasks polling the flag at once
		nap      time.Duration // the poll's sleep between looks (noSleep: none)
		livelock bool
		spins    bool // the livelock is one task's spins (else steps at one instant)
	}{
		{"random, a poll without sleep never parks", "random", 1, noSleep, true, true},
		{"pct, a poll without sleep never parks", "pct:3", 2, noSleep, true, true},
		{"random, a poll that sleeps 0 leaves the clock still", "random", 1, 0, true, false},
		{"pct, polls that sleep 0 leave the clock still", "pct:3", 2, 0, true, false},
		{"random, the poll sleeps", "random", 1, 100 * time.Millisecond, false, false},
		{"pct, the polls sleep", "pct:3", 2, 100 * time.Millisecond, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := ParseStrategy(c.strategy)
			require.NoError(t, err)
			s := NewScheduler(1)
			s.UseStrategy(st)
			defer s.Close()
			done := false
			s.Go("setter", func() { s.Sleep(time.Second); done = true })
			for range c.pollers {
				s.Go("poller", func() {
					for !done {
						s.Point(impl.PointRead)
						if c.nap != noSleep {
							s.Sleep(c.nap)
						}
					}
				})
			}
			err = s.RunFor(time.Minute)
			if !c.livelock {
				require.NoError(t, err)
				return
			}
			var le *LivelockError
			require.Error(t, err)
			if !errors.As(err, &le) {
				assert.Contains(t, err.Error(), "livelock:")
				assert.True(t, c.spins, "a task's panic carries a spins' livelock: %v", err)
				return
			}
			assert.Equal(t, c.spins, le.Spins, err.Error())
		})
	}
}
