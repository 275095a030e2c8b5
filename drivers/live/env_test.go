package live

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process's tasks end with it, whoever started them, and a task on the run's Env outlives every
// process: ownership is the Env a task sleeps on (a client polling its job through a dead server keeps
// polling), never the goroutine it runs on.
func TestEnvProcessesEndTheirOwnSleepers(t *testing.T) {
	run := NewEnv()
	proc := run.Child()
	var procEnded, runLives, fromOutside atomic.Bool
	proc.Go("ms/worker", func() {
		defer procEnded.Store(true)
		for {
			proc.Sleep(10 * time.Millisecond)
		}
	})
	run.Go("client-1", func() {
		for !procEnded.Load() {
			run.Sleep(5 * time.Millisecond)
		}
		run.Sleep(20 * time.Millisecond) // still alive after the process closed
		runLives.Store(true)
	})
	// a goroutine that is not proc's task but sleeps on proc (a call into the process) ends with it too
	sig := proc.NewSignal()
	go func() {
		defer fromOutside.Store(true)
		sig.Wait(time.Hour)
	}()
	time.Sleep(30 * time.Millisecond)
	proc.Close()
	require.Eventually(t, procEnded.Load, 5*time.Second, 5*time.Millisecond, "the process's task outlived it")
	require.Eventually(t, fromOutside.Load, 5*time.Second, 5*time.Millisecond, "a wait on the closed process went on")
	require.Eventually(t, runLives.Load, 5*time.Second, 5*time.Millisecond, "the run's task died with the process")
	var late atomic.Bool
	proc.Go("ms/late", func() { late.Store(true) })
	run.Close()
	assert.True(t, run.Wait(5*time.Second), "tasks left after the run closed")
	assert.False(t, late.Load(), "a closed process started a task")
}

// Closing the run ends its processes' tasks.
func TestEnvRunEndsItsProcesses(t *testing.T) {
	run := NewEnv()
	proc := run.Child().Child() // processes do not nest: this is another process of the run
	var ended atomic.Bool
	proc.Go("agent/h1/ping", func() {
		defer ended.Store(true)
		proc.Sleep(time.Hour)
	})
	time.Sleep(10 * time.Millisecond)
	run.Close()
	require.Eventually(t, ended.Load, 5*time.Second, 5*time.Millisecond)
	assert.True(t, run.Wait(5*time.Second))
}

// A scaled clock runs speed times the wall clock; Wall says how long its durations last in wall time.
func TestScaledEnvClock(t *testing.T) {
	e := NewScaledEnv(20)
	assert.Equal(t, 50*time.Millisecond, e.Wall(time.Second))
	assert.Equal(t, time.Second, NewEnv().Wall(time.Second))
	t0, w0 := e.Now(), time.Now()
	e.Sleep(time.Second)
	took := time.Since(w0)
	advanced := e.Now().Sub(t0)
	assert.GreaterOrEqual(t, took, 50*time.Millisecond)
	assert.GreaterOrEqual(t, advanced, time.Second)
}

// events is a history sink that keeps what it is given.
type events struct {
	mu sync.Mutex
	es []history.Event
}

func (s *events) Emit(e history.Event) { s.mu.Lock(); s.es = append(s.es, e); s.mu.Unlock() }

func (s *events) details() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.es {
		out = append(out, e.Detail)
	}
	return out
}

// A dead process writes nothing more, as a killed JVM runs none of its threads' finally blocks: a
// task of a closed process unwinds its deferred calls (they may release Go resources), but the first
// database access of one ends it, as the simulator's killed task ends at its first Now. That holds for
// a task parked when its process closed (implementNetwork's cleanup in a finally, run from
// guru.implement's sleep, wrote Implementing back to Allocated in the live world) and for one still
// running (an answer just in: it must not complete the work of a dead thread). Tasks of the run and
// goroutines that are no process's task write on.
func TestEnvDeadProcessWritesNothingMore(t *testing.T) {
	run := NewEnv()
	defer run.Close()
	sink := &events{}
	db := impl.NewDB(run, sink)
	note := func(what string) { db.Emit(history.Event{Kind: history.Log, Detail: what}) }
	proc := run.Child()
	parked, running := make(chan struct{}), make(chan struct{})
	var unwound atomic.Int32
	proc.Go("Work-Job-Executor-1", func() {
		defer unwound.Add(1) // no database access: runs
		defer note("finally of the parked task")
		note("parked task before the kill")
		close(parked)
		proc.Sleep(time.Hour)
		note("parked task after its sleep")
	})
	release := make(chan struct{})
	proc.Go("Work-Job-Executor-2", func() {
		defer unwound.Add(1)
		defer note("finally of the running task")
		close(running)
		<-release // running (not parked on the Env) while its process dies
		note("running task after the kill")
	})
	<-parked
	<-running
	proc.Close()
	close(release)
	require.Eventually(t, func() bool { return unwound.Load() == 2 }, 5*time.Second, 5*time.Millisecond)
	note("outside any process")
	done := make(chan struct{})
	run.Go("client-1", func() { note("task of the run"); close(done) })
	<-done
	assert.Equal(t, []string{"parked task before the kill", "outside any process", "task of the run"}, sink.details())
}
