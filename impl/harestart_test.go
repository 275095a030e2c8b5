package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// TestHARestartAbortsOnAFailedForcedStop pins HighAvailabilityManagerImpl.restart and processWork
// (apache/cloudstack@04913a45, server/src/main/java/com/cloud/ha/HighAvailabilityManagerImpl.java;
// issue 34 item 10): restart's forced advanceStop(vm, true) of a VM that cannot take StopRequested
// (Starting) cleans up and throws — "not in 'Stopping' state", or the cleanup's own failure; restart rethrows
// what it catches and catches nothing else, so processWork's catch ("Encountered unhandled exception
// during HA process, reschedule work") hands the item back for restart.retry.interval, with the state
// and update count of the VM as read before restart (the item's own), and nothing starts the VM this
// round. Here web1's StartCommand hangs on a cut link; the restart item (its host removed: the forced
// stop without investigation) queues its stop behind the start, which times out and leaves web1
// Starting; the stop's cleanup then fails (the host is out of reach).
func TestHARestartAbortsOnAFailedForcedStop(t *testing.T) {
	w, v := deployedUntilStartSent(t, impl.Switches{})
	w.f.Cut("h1", true)
	w.srv.ScheduleHaRestartForTest(v.ID, "h-removed")
	rescheduled := "Rescheduling work HAWork[1-HA-"
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(20*time.Minute), func() bool { return w.log.has("HA-Worker", rescheduled) }))
	require.True(t, w.log.has("HA-Worker", "How come that HA step is Investigating and the host is removed?"))
	require.True(t, w.log.has("HA-Worker", rescheduled))
	require.True(t, w.log.has("HA-Worker", "Encountered unhandled exception during HA process, reschedule work: CloudRuntimeException: Failed to cleanup web1"))
	require.False(t, w.log.has("HA-Worker", "HA is now restarting"), "no restart this round")
	require.False(t, w.log.has("HA-Worker", "Unable to restart"), "no start was tried")
	// the forced stop's cleanup could not reach h1 (a host that may come back: C1's fix keeps what
	// the domain may use) and threw; web1 stays Starting
	require.Equal(t, vm.Starting, w.db.VM(v.ID).State)
	require.Contains(t, w.db.HaWorkForTest(v.ID), "HA Investigating 1", "rescheduled at its step, one try counted")
}
