package live

import (
	"sync/atomic"
	"testing"
	"time"

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
