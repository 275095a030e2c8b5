// Package sim is the deterministic simulator driver: a virtual clock and a seeded scheduler that runs
// the management server's threads, the agents and the hypervisors one step at a time, in-memory hosts
// and an in-memory agent link that can be cut. The same seed gives the same history, byte for byte.
package sim

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
)

// Epoch is virtual time zero: the day the seed 000 A/B ran.
var Epoch = time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)

// Scheduler runs tasks as coroutines (iter.Pull), so only one runs at a time. A task that would block
// (sleep, wait on a signal) parks and hands control back; the scheduler advances virtual time to the next due
// wake-up and, among wake-ups due at the same instant, picks with the seeded RNG (Random) or by the
// tasks' priorities (PCT, which also preempts at scheduling points: see pct.go).
type Scheduler struct {
	now time.Time
	// domainsVer counts the changes to the domains of every host of this scheduler (DomainsVersion)
	domainsVer uint64
	rng        *rand.Rand
	seed       uint64
	// strategy and pct: nil pct is Random, whose scheduling points cost one nil check.
	strategy Strategy
	pct      *pct
	queue    wakeQueue
	free     []*wakeup // wake-ups done with, for reuse: a step allocates nothing
	seq      uint64
	cur      *task
	tasks    map[*task]struct{}
	ids      uint64
	steps    uint64
	// still counts the steps run since virtual time last moved
	still uint64
	fail  error
	// closing: no timer runs and every new task is born killed.
	closing bool
	// AfterStep, when set, runs on the scheduler's goroutine after every task step.
	AfterStep func()
	// MaxSteps, when not 0, bounds the steps of the simulation: RunUntil stops with a *LimitError
	// once it is reached, so no scenario or program can run unbounded.
	MaxSteps uint64
	// Interrupted, when set, is asked between steps (every interruptEvery); an error stops RunUntil
	// with it, between two steps, as Ctrl-C must. It draws nothing from the RNG: the schedule up to
	// the stop is the same as an uninterrupted run's.
	Interrupted func() error
}

// interruptEvery is how many steps run between two looks at Interrupted (a context's Err takes a
// lock; a step is microseconds).
const interruptEvery = 64

// LivelockSteps bounds the steps a simulation runs without virtual time moving: a task that polls in a
// loop with no sleep (a deleted Sleep in a wait loop) keeps the others runnable and the clock still
// for ever, which no scenario's bound of virtual time ends. A count of steps, not a wall clock, so
// the same seed fails at the same step on every machine. The busiest legitimate instant of the
// built-in scenarios and explorations runs 601 steps (load-deploy-destroy); the bound is far above
// any load a scenario can ask for, and a simulator runs it in seconds.
var LivelockSteps uint64 = 10_000_000 // a variable so that tests can make it small

// LivelockError is a simulation in which LivelockSteps steps ran without virtual time moving.
type LivelockError struct {
	Steps uint64
	At    time.Time
	Task  string // the task that ran last
	// Spins: the task passed Steps scheduling points and lock takings without parking (else the
	// simulation ran Steps steps without virtual time moving)
	Spins bool
}

func (e *LivelockError) Error() string {
	what := "scheduler steps without virtual time moving"
	if e.Spins {
		what = "scheduling points and lock takings without parking"
	}
	return fmt.Sprintf("livelock: %d %s at %s (task %s): a loop that waits without sleeping", e.Steps, what, e.At.Format("15:04:05.000"), e.Task)
}

// LivelockSpins bounds the scheduling points and lock takings one task passes without parking: a
// loop that waits with no sleep at all, under Random (whose points never park) or alone at its
// instant, never hands control back, so no step is counted and the run hangs for ever. The busiest
// legitimate run of a task passes 800.
var LivelockSpins uint64 = 10_000_000

// spin counts one scheduling point or lock taking of the running task and ends the task, failing the
// run, once it has passed LivelockSpins without parking.
func (s *Scheduler) spin() {
	t := s.cur
	if t == nil {
		return
	}
	t.spins++
	if t.spins == LivelockSpins {
		panic(&LivelockError{Steps: t.spins, At: s.now, Task: t.name, Spins: true})
	}
}

// Spin is impl.Spinner: a lock taken by the running task (impl's coopMutex), counted as a point is.
func (s *Scheduler) Spin() { s.spin() }

// LimitError is a simulation stopped at its bound of steps.
type LimitError struct{ Steps uint64 }

func (e *LimitError) Error() string {
	return fmt.Sprintf("the simulation reached its bound of %d scheduler steps", e.Steps)
}

type task struct {
	id   uint64
	name string
	// resume runs the task until it parks or ends; yield, on the task's goroutine, hands control back.
	// A coroutine switch goes straight from one goroutine to the other, where the two unbuffered
	// channels this replaced went through the Go scheduler's run queue at every step.
	resume func() (struct{}, bool)
	yield  func(struct{}) bool
	gen    uint64
	killed bool
	done   bool
	fn     func()
	prio   uint64 // PCT's priority (unused under Random)
	// spins counts the scheduling points and lock takings the task passed since it last resumed
	spins uint64
}

type wakeup struct {
	at  time.Time
	tie uint64 // seeded: the schedule's choice among wake-ups due at the same instant
	seq uint64 // insertion order, last resort
	t   *task
	gen uint64
	fn  func() // a timer callback instead of a task: runs on the scheduler, must not block
}

// queued is a wake-up in the queue with its order key inline: the heap's comparisons read the array,
// not the wake-ups (with thousands of tasks, a dereference per comparison missed the cache). The key
// is unique (seq), so the order of pops is the key's order whatever the heap's shape.
type queued struct {
	at  int64 // at.UnixNano()
	tie uint64
	seq uint64
	w   *wakeup
}

func (a *queued) less(b *queued) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.seq < b.seq
}

// wakeQueue is a binary min-heap of wake-ups (container/heap's algorithm without its interface
// calls and boxing).
type wakeQueue []queued

func (q wakeQueue) Len() int      { return len(q) }
func (q wakeQueue) peek() *wakeup { return q[0].w }

func (q *wakeQueue) push(w *wakeup) {
	*q = append(*q, queued{at: w.at.UnixNano(), tie: w.tie, seq: w.seq, w: w})
	h := *q
	for j := len(h) - 1; j > 0; {
		i := (j - 1) / 2
		if !h[j].less(&h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (q *wakeQueue) pop() *wakeup {
	h := *q
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h[r].less(&h[j]) {
			j = r
		}
		if !h[j].less(&h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	w := h[n].w
	h[n] = queued{}
	*q = h[:n]
	return w
}

// killed is the panic value that unwinds a killed task.
type killed struct{}

// NewScheduler returns a scheduler at Epoch whose choices come from seed.
func NewScheduler(seed uint64) *Scheduler {
	return &Scheduler{
		now:   Epoch,
		seed:  seed,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		tasks: map[*task]struct{}{},
	}
}

// Rand is the scheduler's seeded RNG, for jitter that must replay with the seed.
func (s *Scheduler) Rand() *rand.Rand { return s.rng }

// Now is the virtual time.
//
// A killed task unwinds with a panic, so its deferred calls run; asking the time is how they would
// reach the world (every record write stamps it), so a killed task asking for it unwinds further. A
// process that died writes nothing more, as when CloudStack's management server is killed mid-job.
func (s *Scheduler) Now() time.Time {
	if s.cur != nil && s.cur.killed {
		panic(killed{})
	}
	return s.now
}

// Steps counts task steps run so far.
func (s *Scheduler) Steps() uint64 { return s.steps }

func (s *Scheduler) push(at time.Time, t *task) {
	s.seq++
	tie := s.rng.Uint64() // drawn under both strategies, so the RNG's sequence stays the same
	if s.pct != nil {
		tie = prioTie(t.prio)
	}
	s.queue.push(s.wakeup(wakeup{at: at, tie: tie, seq: s.seq, t: t, gen: t.gen}))
}

// wakeup returns a wake-up holding v, reusing a spent one when there is one.
func (s *Scheduler) wakeup(v wakeup) *wakeup {
	if n := len(s.free); n > 0 {
		w := s.free[n-1]
		s.free = s.free[:n-1]
		*w = v
		return w
	}
	w := v
	return &w
}

// spent takes back a wake-up popped from the queue that nothing refers to any more.
func (s *Scheduler) spent(w *wakeup) {
	*w = wakeup{}
	s.free = append(s.free, w)
}

// After runs fn on the scheduler after d of virtual time. fn must not block: it is for deliveries and
// timers (a message arriving, a guest becoming ready), not for threads.
func (s *Scheduler) After(d time.Duration, fn func()) {
	if d < 0 {
		d = 0
	}
	s.seq++
	s.queue.push(s.wakeup(wakeup{at: s.now.Add(d), tie: s.rng.Uint64(), seq: s.seq, fn: fn}))
}

// Go starts a task; it first runs when the scheduler picks it.
func (s *Scheduler) Go(name string, fn func()) {
	s.ids++
	t := &task{id: s.ids, name: name, fn: fn, killed: s.closing}
	if s.pct != nil {
		t.prio = s.pct.priority(s.strategy.depth())
	}
	s.tasks[t] = struct{}{}
	// never stopped: a task ends by returning, or unwinds from its park once killed (Close)
	t.resume, _ = iter.Pull(func(yield func(struct{}) bool) {
		t.yield = yield
		s.body(t)
	})
	s.push(s.now, t)
}

func (s *Scheduler) body(t *task) {
	defer func() {
		r := recover()
		if r != nil {
			if _, ok := r.(killed); !ok && s.fail == nil {
				s.fail = fmt.Errorf("task %s panicked: %v\n%s", t.name, r, debug.Stack())
			}
		}
		t.done = true
		delete(s.tasks, t)
	}()
	if t.killed {
		return
	}
	t.fn()
}

// park hands control back to the scheduler until this task is woken.
func (s *Scheduler) park(t *task) {
	if t.killed {
		panic(killed{})
	}
	t.yield(struct{}{})
	if t.killed {
		panic(killed{})
	}
}

func (s *Scheduler) running() *task {
	if s.cur == nil {
		panic("sim: blocking call outside a task")
	}
	return s.cur
}

// Sleep parks the running task for d of virtual time.
func (s *Scheduler) Sleep(d time.Duration) {
	t := s.running()
	if d < 0 {
		d = 0
	}
	t.gen++
	s.push(s.now.Add(d), t)
	s.park(t)
}

// Kill unwinds every task whose name starts with prefix at its next park (a process dying: the
// management server's threads, or an agent's). Tasks never run again; their deferred code does not
// touch the simulation.
func (s *Scheduler) Kill(prefix string) {
	for _, t := range s.sortedTasks() {
		if strings.HasPrefix(t.name, prefix) && !t.killed {
			t.killed = true
			if t != s.cur {
				t.gen++
				s.push(s.now, t)
			}
		}
	}
}

func (s *Scheduler) sortedTasks() []*task {
	ts := make([]*task, 0, len(s.tasks))
	for t := range s.tasks {
		ts = append(ts, t)
	}
	// Creation order, never map order: wake-ups pushed in this order draw from the RNG.
	sort.Slice(ts, func(i, j int) bool { return ts[i].id < ts[j].id })
	return ts
}

// step runs the next due task once. It returns false when nothing is due up to limit.
func (s *Scheduler) step(limit time.Time) bool {
	for s.queue.Len() > 0 {
		w := s.queue.peek()
		if w.at.After(limit) {
			return false
		}
		s.queue.pop()
		switch {
		case w.fn != nil && s.closing:
			s.spent(w)
			continue
		case w.fn == nil && (w.t.done || w.gen != w.t.gen):
			s.spent(w)
			continue // stale: the task was woken another way, or is gone
		}
		if w.at.After(s.now) {
			s.now = w.at
			s.still = 0
		}
		s.steps++
		s.still++
		name := ""
		if w.fn != nil {
			w.fn()
		} else {
			w.t.gen++ // any other pending wake-up for this park is now stale
			s.cur = w.t
			name = w.t.name
			w.t.spins = 0
			w.t.resume()
			s.cur = nil
		}
		s.spent(w)
		if s.still >= LivelockSteps && s.fail == nil {
			s.fail = &LivelockError{Steps: s.still, At: s.now, Task: name}
		}
		if s.AfterStep != nil && s.fail == nil {
			s.AfterStep()
		}
		return true
	}
	return false
}

// RunUntil runs tasks until virtual time reaches t (the clock then reads t), stop returns true, a
// task fails, the bound of steps is reached (*LimitError) or Interrupted says so.
func (s *Scheduler) RunUntil(t time.Time, stop func() bool) error {
	for s.fail == nil {
		if stop != nil && stop() {
			return nil
		}
		if s.MaxSteps > 0 && s.steps >= s.MaxSteps {
			return &LimitError{Steps: s.MaxSteps}
		}
		if s.Interrupted != nil && s.steps%interruptEvery == 0 {
			if err := s.Interrupted(); err != nil {
				return err
			}
		}
		if !s.step(t) {
			if t.After(s.now) {
				s.now = t
				s.still = 0
			}
			return s.fail
		}
	}
	return s.fail
}

// RunFor runs for d of virtual time.
func (s *Scheduler) RunFor(d time.Duration) error { return s.RunUntil(s.now.Add(d), nil) }

// Close kills every task and lets each unwind, so no goroutine outlives the simulation.
func (s *Scheduler) Close() {
	s.AfterStep = nil
	s.closing = true
	far := s.now.Add(100 * 365 * 24 * time.Hour)
	for len(s.tasks) > 0 {
		for _, t := range s.sortedTasks() {
			if t != s.cur {
				t.killed = true
				t.gen++
				s.push(s.now, t)
			}
		}
		for s.step(far) {
		}
	}
}

// NewSignal returns a one-shot event for tasks of this scheduler.
func (s *Scheduler) NewSignal() impl.Signal { return &signal{s: s} }

type signal struct {
	s       *Scheduler
	fired   bool
	waiters []*task
}

func (g *signal) Fire() {
	if g.fired {
		return
	}
	g.fired = true
	for _, t := range g.waiters {
		if !t.done {
			g.s.push(g.s.now, t)
		}
	}
	g.waiters = nil
}

func (g *signal) Wait(timeout time.Duration) bool {
	t := g.s.running()
	if g.fired {
		return true
	}
	t.gen++
	g.waiters = append(g.waiters, t)
	if timeout > 0 {
		g.s.push(g.s.now.Add(timeout), t)
	}
	g.s.park(t)
	if !g.fired {
		for i, w := range g.waiters {
			if w == t {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				break
			}
		}
	}
	return g.fired
}

var _ impl.Env = (*Scheduler)(nil)

// DomainsVersion moves whenever a domain on any of the scheduler's hosts changes: a checker that
// compares each host's Version needs to look only when it moved (most steps change no domain).
func (s *Scheduler) DomainsVersion() uint64 { return s.domainsVer }
