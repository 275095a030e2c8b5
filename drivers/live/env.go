// Package live is the real world for impl: wall-clock time, real goroutines, TCP between the
// management server and its agents, a loopback TCP proxy that can cut a link the way a partition does
// (traffic held, connection left open), and a real-time fake hypervisor.
//
// The package is called live, not real: real is a predeclared Go identifier (the builtin real()), and
// a package of that name would shadow it in every file that imports it.
package live

import (
	"runtime"
	"sync"
	"time"

	"github.com/csconform/csconform/impl"
)

// Env is impl.Env on wall-clock time and goroutines. Close ends it: every task parked in Sleep or a
// Signal's Wait exits (runtime.Goexit, deferred calls run), as a process's threads do when it stops.
type Env struct {
	done     chan struct{}
	stopOnce sync.Once
	tasks    sync.WaitGroup
}

// NewEnv returns a running environment.
func NewEnv() *Env { return &Env{done: make(chan struct{})} }

// Now is the wall clock.
func (e *Env) Now() time.Time { return time.Now() }

// Sleep blocks for d; a closed Env ends the calling goroutine instead.
func (e *Env) Sleep(d time.Duration) {
	if d <= 0 {
		e.exitIfClosed()
		runtime.Gosched()
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.done:
		runtime.Goexit()
	}
}

func (e *Env) exitIfClosed() {
	select {
	case <-e.done:
		runtime.Goexit()
	default:
	}
}

// Go runs fn on its own goroutine. The name is CloudStack's thread name; it is not needed here.
func (e *Env) Go(name string, fn func()) {
	select {
	case <-e.done:
		return // a stopped process starts nothing
	default:
	}
	e.tasks.Add(1)
	go func() {
		defer e.tasks.Done()
		fn()
	}()
}

// NewSignal returns a one-shot event.
func (e *Env) NewSignal() impl.Signal { return &signal{env: e, ch: make(chan struct{})} }

// Close stops the environment: parked tasks exit, new tasks do not start. Tasks blocked on a socket
// end when their transport closes.
func (e *Env) Close() { e.stopOnce.Do(func() { close(e.done) }) }

// Done is closed once the environment is closed.
func (e *Env) Done() <-chan struct{} { return e.done }

// Wait waits up to timeout for every task to end; false if some still run.
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
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
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
		return false
	}
}

var _ impl.Env = (*Env)(nil)
