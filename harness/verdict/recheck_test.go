package verdict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// A saved history judged again: a guard's verdict the run recorded is counted once, one it did not
// record is added after the recorded ones, and a guard without its setting is undecided.
func TestRecheck(t *testing.T) {
	t0 := time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)
	job := []history.Event{
		{Seq: 1, Time: t0, Actor: "API-Job-Executor-1", Kind: history.State, Object: "job:5", To: "IN_PROGRESS", Detail: "VmWorkStart VirtualMachine:2"},
		{Seq: 2, Time: t0.Add(time.Hour), Actor: "AsyncJobMgr-Heartbeat-2", Kind: history.State, Object: "job:5", From: "IN_PROGRESS", To: "Expunged", Detail: "VmWorkStart"},
	}
	cfg, err := impl.NewConfig(nil)
	require.NoError(t, err)
	defaults := harness.GuardConfig(cfg)
	judged := Recheck(job, defaults, time.Second)
	require.Len(t, judged.Violations, 1)
	gv := judged.Violations[0]
	assert.Equal(t, invariant.TransitionGuard, gv.To)

	recorded := append(job, history.Event{Seq: 3, Time: gv.Time, Kind: history.Violation, Object: gv.Object, To: gv.To, Detail: gv.Detail})
	assert.Len(t, Recheck(recorded, defaults, time.Second).Violations, 1, "recorded and judged again: once")

	undecided := Recheck(job, guard.Config{}, time.Second) // job.expire.minutes not given
	assert.Empty(t, undecided.Violations)
	assert.NotEmpty(t, undecided.Guards.Undecided)
}
