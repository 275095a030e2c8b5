package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
)

// A job expunged unfinished two hours after its creation breaks job-expunge-after-expire under
// CloudStack's job.expire.minutes (a day): the planted bug of the class is a GC that expunges before
// its cut. A setConfig to an hour before the expunge makes the same expunge allowed: each change is
// judged under the configuration in force at its time.
func TestJudgeGuards(t *testing.T) {
	t0 := time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)
	day := guard.Config{JobExpire: 24 * time.Hour}
	events := []history.Event{
		{Seq: 1, Time: t0, Actor: "API-Job-Executor-1", Kind: history.State, Object: "job:5", To: "IN_PROGRESS", Detail: "VmWorkStart VirtualMachine:2"},
		{Seq: 2, Time: t0.Add(2 * time.Hour), Actor: "AsyncJobMgr-Heartbeat-2", Kind: history.State, Object: "job:5", From: "IN_PROGRESS", To: "Expunged", Detail: "VmWorkStart"},
	}
	for _, c := range []struct {
		name string
		cfgs []GuardConfigAt
		want int
	}{
		{"expunged before job.expire.minutes (planted)", []GuardConfigAt{{Cfg: day}}, 1},
		{"job.expire.minutes set to an hour at +1h", []GuardConfigAt{{Cfg: day}, {From: t0.Add(time.Hour), Cfg: guard.Config{JobExpire: time.Hour}}}, 0},
		{"set to an hour only after the expunge", []GuardConfigAt{{Cfg: day}, {From: t0.Add(3 * time.Hour), Cfg: guard.Config{JobExpire: time.Hour}}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := JudgeGuards(slices.Values(events), c.cfgs)
			assert.Len(t, ch.Violations, c.want)
			assert.Equal(t, 1, ch.Judged[guard.GJobExpunge])
			for _, v := range ch.Violations {
				gv := GuardViolation(v)
				assert.Equal(t, "transition-guard", gv.Invariant)
				assert.Equal(t, "job:5", gv.Object)
				assert.Equal(t, "job-expunge-after-expire: job IN_PROGRESS --Expunged--> Expunged by AsyncJobMgr-Heartbeat-2 was not allowed: job:5 (VmWorkStart) was expunged unfinished 2h0m0s after its creation, before job.expire.minutes (24h0m0s) (history lines 1, 2)", gv.Message)
			}
		})
	}
}
