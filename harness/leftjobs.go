package harness

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/job"
)

// LeftServerJobBound is how long a stopped management server's jobs may stay in progress while another
// server runs: the cluster heartbeat threshold after which a peer judges it gone
// (ClusterManagerImpl.peerScan), and a minute for the peer's scan and its cleanup
// (AsyncJobManagerImpl.onManagementNodeLeft → cleanupLeftOverJobs).
const LeftServerJobBound = impl.ClusterHeartbeatThreshold + time.Minute

// checkLeftServerJobs judges, at the end of a run with several servers, every stop of a peer that
// lasted past LeftServerJobBound while another server ran throughout: each job of the stopped
// server that was in progress when it stopped must have ended by then, and each HA work item it was
// working (a try its log began and never ended) must have been taken up again by another server
// (detect.LeftServerHaItems). One left is a left-server-job violation (M1: the peer cleans up by the
// mshost row id and finds nothing; a peer that does not release the items leaves them taken).
func (c *Cluster) checkLeftServerJobs() {
	if len(c.peers) == 0 {
		return
	}
	ended := map[string]time.Time{}
	for e := range c.Rec.History().All() {
		if e.Kind != history.State || !strings.HasPrefix(e.Object, "job:") {
			continue
		}
		if _, ok := ended[e.Object]; !ok && job.Status(e.To).Done() {
			ended[e.Object] = e.Time
		}
	}
	end := c.Now()
	var stops []detect.ServerStop
	defer func() {
		c.reportAll(detect.LeftServerHaItems(detect.HaItems(c.Rec.History().All()), stops))
		SortViolations(c.Violations) // the jobs' violations below
	}()
	for _, p := range c.peers {
		for _, d := range p.downs {
			due := d.from.Add(LeftServerJobBound)
			if due.After(end) || (!d.to.IsZero() && !d.to.After(due)) || !c.anotherServerUp(p, d.from, due) {
				continue
			}
			stops = append(stops, detect.ServerStop{Prefix: p.srv.ThreadPrefix, Name: p.name, From: d.from, Due: due})
			for _, j := range c.DB.Jobs(func(j *impl.JobVO) bool { return j.MSID == p.srv.ID && j.Created.Before(d.from) }) {
				if at, ok := ended[impl.JobObject(j.ID)]; ok && !at.After(due) {
					continue
				}
				c.report(invariant.Violation{Invariant: invariant.LeftServerJob, Object: impl.JobObject(j.ID), Time: due,
					Message: fmt.Sprintf("job %d (%s of %s %d) of management server %s, which stopped at %s, was still in progress %s later while another server ran: no peer cleaned up after it",
						j.ID, j.Cmd, j.InstanceType, j.InstanceID, p.name, d.from.Format("15:04:05"), LeftServerJobBound)})
			}
		}
	}
}

// anotherServerUp says whether a server other than p ran throughout [from, to].
func (c *Cluster) anotherServerUp(p *peerServer, from, to time.Time) bool {
	upThroughout := func(downs []span) bool {
		return !slices.ContainsFunc(downs, func(s span) bool { return s.from.Before(to) && (s.to.IsZero() || s.to.After(from)) })
	}
	c.procMu.Lock()
	downs := slices.Clone(c.msDowns)
	c.procMu.Unlock()
	if upThroughout(downs) {
		return true
	}
	return slices.ContainsFunc(c.peers, func(q *peerServer) bool { return q != p && upThroughout(q.downs) })
}
