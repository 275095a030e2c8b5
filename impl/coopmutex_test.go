package impl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// preempter is a cooperative world as the simulator is one (an Env that yields at points).
type preempter struct{ Env }

func (preempter) Point(PointKind) {}

// In a cooperative world a lock found held was kept by a parked task or never released: Lock says so
// (a deleted Unlock or a critical section that yields is a finding, not a run that hangs for ever);
// in a real world it waits, as a mutex does.
func TestCoopMutexReportsALockKeptAcrossAPoint(t *testing.T) {
	coop := &coopMutex{env: preempter{}, name: "the database's lock"}
	coop.Lock()
	require.PanicsWithValue(t, "deadlock: the database's lock is held by a task that is parked (a critical section that yields or never unlocks); the simulator runs one task at a time, so no task can ever release it", coop.Lock)
	coop.Unlock()
	require.NotPanics(t, coop.Lock, "released, it is taken again")

	real := &coopMutex{name: "the database's lock"}
	real.Lock()
	got := make(chan struct{})
	go func() { real.Lock(); close(got) }()
	select {
	case <-got:
		t.Fatal("a real world's lock was taken twice")
	case <-time.After(50 * time.Millisecond):
	}
	real.Unlock()
	<-got
}
