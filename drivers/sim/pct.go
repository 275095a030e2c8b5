package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/csconform/csconform/impl"
)

// StrategyKind names how the scheduler chooses among tasks runnable at the same virtual instant.
type StrategyKind uint8

const (
	// Random is the default: tasks switch only where they block (sleep, wait), and among wake-ups due
	// at the same instant the seeded RNG picks. Scheduling points are no-ops.
	Random StrategyKind = iota
	// PCT is Burckhardt et al.'s probabilistic concurrency testing (ASPLOS 2010): every task gets a
	// random priority, the highest-priority runnable task runs, and at depth-1 random scheduling
	// points the running task's priority drops below every other. Scheduling points (the database,
	// the lock table, the agent link) can then preempt a task in favour of another runnable at the
	// same virtual instant, so a read-then-write race is reachable; virtual time never advances for
	// a preemption.
	PCT
)

// DefaultPCTDepth is the bug depth when none is given. PCT's bound for depth d is 1/(n·k^(d-1)); 3
// would do for a read, another task's write and the stale write, but more change points find such a
// race sooner here, where most contended points are a task and the one it just woke: the planted
// read-then-write race (impl.PlantedIPFromStaleRead) was found within 1000 explore cases on 2 of 6
// seeds at depth 2, 5 of 6 at 3, 6 of 6 at 5, 8 and 12, fastest at 8.
const DefaultPCTDepth = 8

// DefaultPCTHorizon is the expected number of contended scheduling points of one run (k in the
// paper), over which the priority change points are spread: an explore case has 251 on average
// (median 217, 90th percentile 439).
const DefaultPCTHorizon = 250

// Strategy is the scheduler's strategy. The zero value is Random.
type Strategy struct {
	Kind StrategyKind
	// Depth is PCT's d: d-1 priority change points (0: DefaultPCTDepth).
	Depth int
	// Horizon is PCT's k (0: DefaultPCTHorizon).
	Horizon uint64
}

// ParseStrategy reads "random" (or ""), "pct" or "pct:DEPTH" (the --scheduler flag).
func ParseStrategy(s string) (Strategy, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "", "random":
		if hasArg {
			return Strategy{}, fmt.Errorf("scheduler %q: random takes no depth", s)
		}
		return Strategy{}, nil
	case "pct":
		st := Strategy{Kind: PCT}
		if hasArg {
			d, err := strconv.Atoi(arg)
			if err != nil || d < 1 || d > 100 {
				return Strategy{}, fmt.Errorf("scheduler %q: the depth must be a whole number from 1 to 100", s)
			}
			st.Depth = d
		}
		return st, nil
	}
	return Strategy{}, fmt.Errorf("unknown scheduler %q (random, pct or pct:DEPTH)", s)
}

func (st Strategy) String() string {
	if st.Kind != PCT {
		return "random"
	}
	return fmt.Sprintf("pct:%d", st.depth())
}

// MarshalText and UnmarshalText make a Strategy a scenario file's `scheduler:` value.
func (st Strategy) MarshalText() ([]byte, error) { return []byte(st.String()), nil }

func (st *Strategy) UnmarshalText(b []byte) error {
	v, err := ParseStrategy(string(b))
	if err != nil {
		return err
	}
	*st = v
	return nil
}

func (st Strategy) depth() int {
	if st.Depth <= 0 {
		return DefaultPCTDepth
	}
	return st.Depth
}

func (st Strategy) horizon() uint64 {
	if st.Horizon == 0 {
		return DefaultPCTHorizon
	}
	return st.Horizon
}

// pct is the PCT strategy's state. It draws from its own stream of the seed, so the scheduler's RNG
// (ties, latencies, the world's jitter) gives the same sequence under both strategies.
type pct struct {
	rng *rand.Rand
	// changes[i] is the scheduling point at which the running task's priority drops to i+1.
	changes     []uint64
	points      uint64
	preemptions uint64
}

// Initial priorities lie above every change-point priority (1..depth-1) and are distinct with
// overwhelming probability; the insertion order breaks the rare tie.
const prioSpan = 1 << 62

func newPCT(seed uint64, st Strategy) *pct {
	p := &pct{rng: rand.New(rand.NewPCG(seed^0x5ca1ab1e, seed+0x243f6a8885a308d3))}
	k := st.horizon()
	for i := 1; i < st.depth(); i++ {
		p.changes = append(p.changes, 1+p.rng.Uint64N(k))
	}
	return p
}

func (p *pct) priority(depth int) uint64 { return uint64(depth) + p.rng.Uint64N(prioSpan) }

// tie orders a task's wake-up among those due at the same instant: the higher the priority, the
// sooner.
func prioTie(prio uint64) uint64 { return ^prio }

// UseStrategy sets the scheduling strategy; call it before the first task starts.
func (s *Scheduler) UseStrategy(st Strategy) {
	s.strategy = st
	s.pct = nil
	if st.Kind == PCT {
		s.pct = newPCT(s.seed, st)
	}
}

// Strategy is the scheduler's strategy.
func (s *Scheduler) Strategy() Strategy { return s.strategy }

// Preemptions counts the tasks preempted at scheduling points (always 0 under Random).
func (s *Scheduler) Preemptions() uint64 {
	if s.pct == nil {
		return 0
	}
	return s.pct.preemptions
}

// Points counts the scheduling points PCT decided at: those where another task was runnable at the
// same instant (0 under Random, which decides nothing there).
func (s *Scheduler) Points() uint64 {
	if s.pct == nil {
		return 0
	}
	return s.pct.points
}

// Point is a scheduling point of the running task (impl.Preempter). Under Random it does nothing.
// Under PCT, where another wake-up is due at this instant (a choice exists; elsewhere there is none,
// and PCT's k counts choices, not instructions), it counts the point, drops the task's priority if
// this is a change point, and parks the task if the other would be picked before it: the other runs
// first, and this one resumes at the same virtual instant when its priority is again the highest.
func (s *Scheduler) Point(impl.PointKind) {
	s.spin()
	p := s.pct
	if p == nil {
		return
	}
	t := s.cur
	if t == nil || t.killed || s.closing {
		return // the scheduler's own goroutine (checks, timers), or a dying task
	}
	for s.queue.Len() > 0 {
		w := s.queue.peek()
		if w.fn == nil && (w.t.done || w.gen != w.t.gen) {
			s.spent(s.queue.pop()) // stale, as step would find it: popping it sooner changes nothing
			continue
		}
		if w.at.After(s.now) {
			return // nothing else is due now: no choice to make
		}
		p.points++
		for i, at := range p.changes {
			if at == p.points {
				t.prio = uint64(i + 1)
			}
		}
		if w.tie > prioTie(t.prio) {
			return // this task still comes first
		}
		p.preemptions++
		t.gen++
		s.push(s.now, t)
		s.park(t)
		return
	}
}

var _ impl.Preempter = (*Scheduler)(nil)
