package harness

import (
	"runtime"
	"sync"
	"time"

	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

// procEnv is the Env of one process incarnation (the management server, an agent) inside the run:
// its own tasks end when it is closed — parked in Sleep or a Signal's Wait, they exit as a killed
// process's threads do — while other tasks that call into it (a client waiting for a job through
// the server's code) keep running on the run's clock.
type procEnv struct {
	base *live.Env
	done chan struct{}
	once sync.Once
	mine sync.Map // goroutine id -> true, for this incarnation's tasks
}

func newProcEnv(base *live.Env) *procEnv { return &procEnv{base: base, done: make(chan struct{})} }

func (p *procEnv) close() { p.once.Do(func() { close(p.done) }) }

func (p *procEnv) Now() time.Time { return time.Now() }

func (p *procEnv) Go(name string, fn func()) {
	select {
	case <-p.done:
		return
	default:
	}
	p.base.Go(name, func() {
		id := goid()
		p.mine.Store(id, true)
		defer p.mine.Delete(id)
		select {
		case <-p.done:
			return
		default:
		}
		fn()
	})
}

func (p *procEnv) owns() bool {
	_, ok := p.mine.Load(goid())
	return ok
}

func (p *procEnv) Sleep(d time.Duration) {
	if !p.owns() {
		p.base.Sleep(d)
		return
	}
	if d <= 0 {
		select {
		case <-p.done:
			runtime.Goexit()
		default:
		}
		runtime.Gosched()
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.done:
		runtime.Goexit()
	case <-p.base.Done():
		runtime.Goexit()
	}
}

func (p *procEnv) NewSignal() impl.Signal { return &procSignal{p: p, ch: make(chan struct{})} }

type procSignal struct {
	p    *procEnv
	once sync.Once
	ch   chan struct{}
}

func (g *procSignal) Fire() { g.once.Do(func() { close(g.ch) }) }

func (g *procSignal) Wait(timeout time.Duration) bool {
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
	var dead <-chan struct{}
	if g.p.owns() {
		dead = g.p.done
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
	case <-dead:
		runtime.Goexit()
	case <-g.p.base.Done():
		runtime.Goexit()
	}
	return false
}

// goid is the calling goroutine's id ("goroutine 123 [running]:").
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[len("goroutine "):]
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

var _ impl.Env = (*procEnv)(nil)
