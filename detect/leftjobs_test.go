package detect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

// ms2 stops at 10 s with job 5 (its start of vm:2) in progress; a peer must fail it by 3m40s. M1, the
// planted bug of this class, cleans up by the mshost row id and finds nothing: the job stays
// IN_PROGRESS.
func TestLeftServerJobs(t *testing.T) {
	at := func(sec int) time.Time { return time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC) }
	stop := ServerStop{Prefix: "ms2:", Name: "ms2", From: at(10), Due: at(220)}
	start := history.Event{Time: at(1), Kind: history.State, Actor: "ms2:API-Job-Executor-1", Object: "job:5", To: "IN_PROGRESS", Detail: "StartVMCmd VirtualMachine:2"}
	failed := func(sec int) history.Event {
		return history.Event{Time: at(sec), Kind: history.State, Actor: "ClusterManagerTask", Object: "job:5", From: "IN_PROGRESS", To: "FAILED"}
	}
	j := Job{ID: 5, Cmd: "StartVMCmd", InstanceType: "VirtualMachine", InstanceID: 2, MSID: "ms2", Created: at(1)}
	for _, c := range []struct {
		name   string
		events []history.Event
		job    Job
		want   int
	}{
		{"left in progress (M1)", []history.Event{start}, j, 1},
		{"failed by a peer in time (fixed)", []history.Event{start, failed(160)}, j, 0},
		{"failed too late", []history.Event{start, failed(400)}, j, 1},
		{"a job of another server", []history.Event{start}, Job{ID: 5, MSID: "ms1", Created: at(1)}, 0},
		{"created after the stop", []history.Event{start}, Job{ID: 5, MSID: "ms2", Created: at(12)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := LeftServerJobs(slices.Values(c.events), []Job{c.job}, []ServerStop{stop})
			assert.Len(t, vs, c.want)
			for _, v := range vs {
				assert.Equal(t, "left-server-job", v.Invariant)
				assert.Equal(t, "job:5", v.Object)
				assert.Equal(t, stop.Due, v.Time)
				assert.Equal(t, "job 5 (StartVMCmd of VirtualMachine 2) of management server ms2, which stopped at 00:00:10, was still in progress 3m30s later while another server ran: no peer cleaned up after it", v.Message)
			}
		})
	}
}
