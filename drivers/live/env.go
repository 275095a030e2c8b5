// Package live is the real world for impl: wall-clock time, real goroutines, TCP between the
// management server and its agents, a loopback TCP proxy that can cut a link the way a partition does
// (traffic held, connection left open), and a real-time fake hypervisor.
//
// The package is called live, not real: real is a predeclared Go identifier (the builtin real()), and
// a package of that name would shadow it in every file that imports it.
package live

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/impl"
)

// Env is impl.Env in real time: goroutines, timers, and a clock that runs Speed times the wall
// clock (1: the wall clock itself). An Env is the run (NewEnv) or one process inside it (Child: a
// management server incarnation, an agent). Close ends it as a process ends: every task parked in
// Sleep or a Signal's Wait on it, or on a child of it, exits (runtime.Goexit, deferred calls run) and
// no new task starts. A task belongs to the process whose Env it sleeps on, so a caller that must
// outlive a process (a client polling its job) waits on its own Env, not the process's: ownership
// is the Env a task is given, never which goroutine it runs on.
//
// Deferred calls are not finally blocks of a live JVM: a killed CloudStack runs none. So a task of a
// closed process also ends at its first database access (Reap, impl.Reaper), whether it unwinds from
// its park or was running when its process died: a dead process writes nothing more, as in the
// simulator. What a process does outside its tasks (an API request's handler, a callback into it
// that logs or sends) goes through Handler, Sink and Transport (dead.go): none of it lands after
// Close.
type Env struct {
	clk    *clock
	parent *Env
	done   chan struct{}
	once   sync.Once
	life   sync.RWMutex    // Close holds it alone, each act of the process shared (dead.go)
	tasks  *sync.WaitGroup // the run's: every task of every process
	owners *owners         // the run's: the process of each running task
}

// owners maps the goroutine of each running task to the process (Env) that started it. Go has no
// goroutine-local state; the id comes from the goroutine's stack header, and is only looked up once
// some process of the run has died.
type owners struct {
	deaths atomic.Int64 // processes closed so far
	mu     sync.Mutex
	of     map[uint64]*Env
}

func (o *owners) set(id uint64, e *Env) {
	o.mu.Lock()
	if e == nil {
		delete(o.of, id)
	} else {
		o.of[id] = e
	}
	o.mu.Unlock()
}

func (o *owners) get(id uint64) *Env {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.of[id]
}

// goid is the calling goroutine's id, from its stack header ("goroutine 18 [running]:").
func goid() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// clock is a scaled clock: it starts at the wall clock's now and runs speed times as fast.
type clock struct {
	epoch time.Time
	speed float64
}

func (k *clock) now() time.Time {
	if k.speed == 1 {
		return time.Now()
	}
	return k.epoch.Add(time.Duration(float64(time.Since(k.epoch)) * k.speed))
}

// wall is how long d of the clock's time lasts on the wall clock.
func (k *clock) wall(d time.Duration) time.Duration {
	if k.speed == 1 {
		return d
	}
	return time.Duration(float64(d) / k.speed)
}

// NewEnv returns a running environment on the wall clock.
func NewEnv() *Env { return NewScaledEnv(1) }

// NewScaledEnv returns a running environment whose clock runs speed times the wall clock, from now.
func NewScaledEnv(speed float64) *Env {
	if speed <= 0 {
		speed = 1
	}
	return &Env{clk: &clock{epoch: time.Now(), speed: speed}, done: make(chan struct{}), tasks: &sync.WaitGroup{},
		owners: &owners{of: map[uint64]*Env{}}}
}

// Child returns a process of e's run: the same clock; closed with the run, or alone by its own
// Close. Processes do not nest: a child's Child is another process of the run.
func (e *Env) Child() *Env {
	root := e
	if root.parent != nil {
		root = root.parent
	}
	return &Env{clk: e.clk, parent: root, done: make(chan struct{}), tasks: e.tasks, owners: e.owners}
}

// Now is the environment's clock.
func (e *Env) Now() time.Time { return e.clk.now() }

// Wall is how long d of the environment's time lasts on the wall clock.
func (e *Env) Wall(d time.Duration) time.Duration { return e.clk.wall(d) }

// closed is whether e or its run is closed.
func (e *Env) closed() bool {
	for p := e; p != nil; p = p.parent {
		select {
		case <-p.done:
			return true
		default:
		}
	}
	return false
}

// Sleep blocks for d of the environment's time; a closed Env ends the calling goroutine instead.
func (e *Env) Sleep(d time.Duration) {
	if d <= 0 {
		if e.closed() {
			runtime.Goexit()
		}
		runtime.Gosched()
		return
	}
	t := time.NewTimer(e.clk.wall(d))
	defer t.Stop()
	if e.parent == nil {
		select {
		case <-t.C:
		case <-e.done:
			runtime.Goexit()
		}
		return
	}
	select {
	case <-t.C:
	case <-e.done:
		runtime.Goexit()
	case <-e.parent.done:
		runtime.Goexit()
	}
}

// Go runs fn on its own goroutine, a task of the run. The name is CloudStack's thread name; it is not
// needed here.
func (e *Env) Go(name string, fn func()) {
	if e.closed() {
		return // a stopped process starts nothing
	}
	e.tasks.Add(1)
	go func() {
		defer e.tasks.Done()
		id := goid()
		e.owners.set(id, e)
		defer e.owners.set(id, nil)
		if e.closed() {
			return
		}
		fn()
	}()
}

// Reap ends the calling goroutine (runtime.Goexit) if it is a task of a closed process (impl.Reaper):
// whichever Env it is called on, since the database that calls it is the run's.
func (e *Env) Reap() {
	if e.Dead() {
		runtime.Goexit()
	}
}

// Dead says whether the calling goroutine is a task of a closed process (impl.Reaper).
func (e *Env) Dead() bool {
	if e.owners.deaths.Load() == 0 {
		return false
	}
	p := e.owners.get(goid())
	return p != nil && p.closed()
}

// NewSignal returns a one-shot event.
func (e *Env) NewSignal() impl.Signal { return &signal{env: e, ch: make(chan struct{})} }

// Close stops the environment: parked tasks exit, new tasks do not start. Tasks blocked on a socket
// end when their transport closes.
func (e *Env) Close() {
	e.life.Lock() // the kill's instant: after the process's acts in flight, before any other
	defer e.life.Unlock()
	e.once.Do(func() {
		close(e.done)
		e.owners.deaths.Add(1)
	})
}

// Done is closed once the environment itself is closed.
func (e *Env) Done() <-chan struct{} { return e.done }

// Wait waits up to timeout (wall time) for every task of the run to end; false if some still run.
func (e *Env) Wait(timeout time.Duration) bool {
	ch := make(chan struct{})
	go func() { e.tasks.Wait(); close(ch) }()
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	}
}

type signal struct {
	env  *Env
	once sync.Once
	ch   chan struct{}
}

func (g *signal) Fire() { g.once.Do(func() { close(g.ch) }) }

func (g *signal) Wait(timeout time.Duration) bool {
	select {
	case <-g.ch:
		return true
	default:
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(g.env.clk.wall(timeout))
		defer t.Stop()
		expired = t.C
	}
	var parent <-chan struct{}
	if g.env.parent != nil {
		parent = g.env.parent.done
	}
	select {
	case <-g.ch:
		return true
	case <-expired:
		select {
		case <-g.ch:
			return true
		default:
			return false
		}
	case <-g.env.done:
		runtime.Goexit()
	case <-parent:
		runtime.Goexit()
	}
	return false
}

var (
	_ impl.Env    = (*Env)(nil)
	_ impl.Reaper = (*Env)(nil)
)
