package detect

import (
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/job"
)

// Job is an async_job row as the records list it at the end of a run: the server that ran it
// (job_executing_msid; the history's lines do not say it) and when it was created.
type Job struct {
	ID           int64
	Cmd          string
	InstanceType string
	InstanceID   int64
	MSID         string
	Created      time.Time
}

// LeftServerJobs judges, for each stop (a ServerStop's Name is its msid), the jobs the stopped
// server had in progress when it stopped: each must have ended by Due, as the history's job
// transitions tell it. The peers should have judged the server gone and failed its jobs
// (AsyncJobManagerImpl.onManagementNodeLeft → cleanupLeftOverJobs); one left in progress is a
// left-server-job violation (M1: the peer cleans up by the mshost row id and finds nothing). The
// violations come stop by stop, each stop's in the order of jobs.
func LeftServerJobs(events iter.Seq[history.Event], jobs []Job, stops []ServerStop) []invariant.Violation {
	if len(stops) == 0 {
		return nil
	}
	ended := map[string]time.Time{}
	for e := range events {
		if e.Kind != history.State || !strings.HasPrefix(e.Object, "job:") {
			continue
		}
		if _, ok := ended[e.Object]; !ok && job.Status(e.To).Done() {
			ended[e.Object] = e.Time
		}
	}
	var out []invariant.Violation
	for _, st := range stops {
		for _, j := range jobs {
			if j.MSID != st.Name || !j.Created.Before(st.From) {
				continue
			}
			obj := fmt.Sprintf("job:%d", j.ID)
			if at, ok := ended[obj]; ok && !at.After(st.Due) {
				continue
			}
			out = append(out, invariant.Violation{Invariant: invariant.LeftServerJob, Object: obj, Time: st.Due,
				Message: fmt.Sprintf("job %d (%s of %s %d) of management server %s, which stopped at %s, was still in progress %s later while another server ran: no peer cleaned up after it",
					j.ID, j.Cmd, j.InstanceType, j.InstanceID, st.Name, st.From.Format("15:04:05"), st.Due.Sub(st.From))})
		}
	}
	return out
}
