package harness

import (
	"slices"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/impl"
)

// LeftServerJobBound is how long a stopped management server's jobs may stay in progress while another
// server runs: the cluster heartbeat threshold after which a peer judges it gone
// (ClusterManagerImpl.peerScan), and a minute for the peer's scan and its cleanup
// (AsyncJobManagerImpl.onManagementNodeLeft → cleanupLeftOverJobs).
const LeftServerJobBound = impl.ClusterHeartbeatThreshold + time.Minute

// checkLeftServerJobs hands detect the stops of a peer that lasted past LeftServerJobBound while
// another server ran throughout, with the jobs as the records list them: detect.LeftServerJobs
// judges the jobs each stopped server left in progress, detect.LeftServerHaItems the HA work items
// it was working.
func (c *Cluster) checkLeftServerJobs() {
	if len(c.peers) == 0 {
		return
	}
	end := c.Now()
	var stops []detect.ServerStop
	for _, p := range c.peers {
		for _, d := range p.downs {
			due := d.from.Add(LeftServerJobBound)
			if due.After(end) || (!d.to.IsZero() && !d.to.After(due)) || !c.anotherServerUp(p, d.from, due) {
				continue
			}
			stops = append(stops, detect.ServerStop{Prefix: p.srv.ThreadPrefix, Name: p.name, From: d.from, Due: due})
		}
	}
	var jobs []detect.Job
	if len(stops) > 0 {
		for _, j := range c.DB.Jobs(nil) {
			jobs = append(jobs, detect.Job{ID: j.ID, Cmd: j.Cmd, InstanceType: j.InstanceType, InstanceID: j.InstanceID, MSID: j.MSID, Created: j.Created})
		}
	}
	h := c.Rec.History()
	c.reportAll(append(detect.LeftServerJobs(h.All(), jobs, stops), detect.LeftServerHaItems(detect.HaItems(h.All()), stops)...))
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
