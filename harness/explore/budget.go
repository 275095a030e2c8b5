package explore

import (
	"errors"
	"math/rand/v2"
	"time"
)

// ChunkCases is how many cases one rapid run covers; a shard takes every n-th chunk.
const ChunkCases = 100

// ChunkSeed is the rapid seed of chunk k: k = 0 is the seed itself, so --seed N --budget 1 replays
// the case rapid reported as N.
func ChunkSeed(seed uint64, k int) uint64 {
	if k == 0 {
		return seed
	}
	return rand.New(rand.NewPCG(seed, uint64(k))).Uint64()
}

// RunBudget is csconform explore's run: budget cases from seed, in chunks of ChunkCases of which
// shard i of n takes every n-th, until a detector flags one (shrunk, and attributed to a defect: the
// shrunk program again under fixed and with each switch off) or the budget is spent. sum gets the
// cases, the last outcome, the undecided cases, the finding, the wall time and the coverage; seen,
// if set, is called after each case with the cases run so far. An ErrInterrupted (Ctrl-C) leaves
// in sum what ran, marked interrupted.
func RunBudget(o Options, budget int, seed uint64, i, n int, sum *Summary, seen func(done int)) error {
	start := time.Now()
	done := 0
	o.Seen = func(out *Outcome) {
		done++
		sum.Last = out
		if o.Detectors.Linear && len(out.Undecided) > 0 {
			sum.Undecided++ // never counted as linearizable
		}
		if seen != nil {
			seen(done)
		}
	}
	shrink := 0 // DefaultShrinkRuns
	if o.RealTime() {
		shrink = 3 // a case takes a minute or two of real time
	}
	end := func() {
		sum.Cases = done
		sum.WallSecs = time.Since(start).Seconds()
		if o.Driver != "container" && o.Guide != nil {
			sum.Coverage = o.Guide.Coverage.Summary()
		}
	}
	for k := 0; done < budget && !sum.Found; k++ {
		if k%n != i {
			continue
		}
		f, _, err := Explore(o, min(ChunkCases, budget-done), ChunkSeed(seed, k), shrink)
		if errors.Is(err, ErrInterrupted) {
			sum.Interrupted = true
			end()
			return err
		}
		if err != nil {
			return err
		}
		if f != nil {
			done++         // Seen counts the cases before the failing one
			f.Cases = done // Explore counts within its chunk; the run, from its start
			f.Attribution = Attribute(f, o)
			sum.Found, sum.Finding, sum.ReplaySeed = true, f, f.Seed
		}
	}
	end()
	return nil
}
