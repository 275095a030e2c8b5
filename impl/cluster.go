package impl

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Several management servers on one database (CloudStack behind a load balancer). Each server has
// its msid; a host belongs to the server its agent is connected to (host.mgmt_server_id); membership
// is ClusterManagerImpl's: every server updates its mshost row every cluster.heartbeat.interval and
// judges a peer whose row is older than cluster.heartbeat.threshold gone, then runs the listeners'
// onManagementNodeLeft (AsyncJobManagerImpl, ClusteredAgentManagerImpl). Read in apache/cloudstack
// main past 4.22 (ClusterManagerImpl @252355aa, AsyncJobManagerImpl @04b49bc3,
// ClusteredAgentManagerImpl @002a9ef8); docs/fidelity.md rows.
//
// A server runs all this only when Clustered: a single server has no peer to judge, and its run
// stays what it was (no heartbeat writes, no global lock rows in its history).

// MSHostVO is an mshost row: the row id (mshost.id, not the msid: the difference matters to
// AsyncJobManagerImpl.onManagementNodeLeft), the msid, the incarnation's run id and its heartbeat.
type MSHostVO struct {
	ID         int64
	MSID       string
	RunID      int64
	LastUpdate time.Time
	State      string // Up, Down
}

// PeerServers finds a running peer by msid (nil: no such process runs). The harness owns the
// processes; impl only asks, as ClusteredAgentAttache asks the network for a socket to a peer.
type PeerServers func(msid string) *Server

// Cluster heartbeat defaults (ClusterManager.HeartbeatInterval / HeartbeatThreshold).
const (
	ClusterHeartbeatInterval  = 1500 * time.Millisecond
	ClusterHeartbeatThreshold = 150 * time.Second
)

// MSHostJoin is ClusterManagerImpl.start's write: insert the server's row, or update it with the new
// run id; the row keeps its id across incarnations.
func (db *DB) MSHostJoin(msid string, runID int64) *MSHostVO {
	point(db.env, PointWrite)
	db.lock()
	defer db.mu.Unlock()
	if db.mshosts == nil {
		db.mshosts = map[string]*MSHostVO{}
	}
	m, ok := db.mshosts[msid]
	if !ok {
		m = &MSHostVO{ID: db.id(), MSID: msid}
		db.mshosts[msid] = m
	}
	m.RunID, m.LastUpdate, m.State = runID, db.env.Now(), "Up"
	c := *m
	return &c
}

// MSHostHeartbeat is ManagementServerHostDaoImpl.update(id, runid, now): false when no row has that
// id and run id (the session is no longer valid).
func (db *DB) MSHostHeartbeat(msid string, runID int64) bool {
	point(db.env, PointWrite)
	db.lock()
	defer db.mu.Unlock()
	m, ok := db.mshosts[msid]
	if !ok || m.RunID != runID {
		return false
	}
	m.LastUpdate, m.State = db.env.Now(), "Up"
	return true
}

// MSHosts lists the mshost rows by id.
func (db *DB) MSHosts() []*MSHostVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	var out []*MSHostVO
	for _, m := range db.mshosts {
		c := *m
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *MSHostVO) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// clusterManager is ClusterManagerImpl's membership for one server: the peers it believes active.
type clusterManager struct {
	s      *Server
	self   *MSHostVO
	active map[string]*MSHostVO // _activePeers, by msid (self included)
}

func (s *Server) startCluster(t *Thread) {
	cm := &clusterManager{s: s, active: map[string]*MSHostVO{}}
	s.cluster = cm
	cm.self = s.DB.MSHostJoin(s.ID, s.Env.Now().UnixNano())
	s.Log(t, "INFO", "", "Management server %s (mshost id %d, runid %d) joins the cluster", s.ID, cm.self.ID, cm.self.RunID)
	s.Go("Cluster-Heartbeat", cm.heartbeatTask)
}

// isActive says whether this server believes msid is up (in _activePeers).
func (cm *clusterManager) isActive(msid string) bool {
	cm.s.mu.Lock()
	defer cm.s.mu.Unlock()
	_, ok := cm.active[msid]
	return ok
}

// heartbeatTask is getHeartbeatTask: update the own row, then peerScan.
func (cm *clusterManager) heartbeatTask(t *Thread) {
	s := cm.s
	for {
		s.Env.Sleep(ClusterHeartbeatInterval)
		if !s.DB.MSHostHeartbeat(s.ID, cm.self.RunID) {
			// ClusterInvalidSessionException → nodeIsolated → ClusterFenceManagerImpl exits the process
			// (219); a row is only ever rewritten by a new incarnation of the same msid, which is never
			// run beside the old one here.
			s.Log(t, "ERROR", "", "Management server %s: runid %d is no longer valid, fencing", s.ID, cm.self.RunID)
			return
		}
		cm.peerScan(t)
	}
}

// peerScan is ClusterManagerImpl.peerScan: a peer whose row stopped being updated within the
// threshold has left (processRemovedNodes), a new active row has joined (processNewNodes).
func (cm *clusterManager) peerScan(t *Thread) {
	s := cm.s
	cut := s.Env.Now().Add(-ClusterHeartbeatThreshold)
	rows := s.DB.MSHosts()
	var left, joined []*MSHostVO
	s.mu.Lock() // cm.active is read by the GC's isActive; no Env call under it
	for _, m := range rows {
		old, was := cm.active[m.MSID]
		alive := m.LastUpdate.After(cut)
		switch {
		case was && !alive:
			left = append(left, old)
			delete(cm.active, m.MSID)
		case was && m.RunID != old.RunID:
			cm.active[m.MSID] = m // "left and rejoined quickly": no listener hears of it
		case !was && alive:
			cm.active[m.MSID] = m
			if m.MSID != s.ID {
				joined = append(joined, m)
			}
		}
	}
	s.mu.Unlock()
	for _, m := range joined {
		s.Log(t, "INFO", "", "Detected management node joined, id:%d, nodeIP:%s", m.ID, m.MSID)
	}
	for _, m := range left {
		s.Log(t, "INFO", "", "Detected management node left, id:%d, nodeIP:%s", m.ID, m.MSID)
		cm.onManagementNodeLeft(t, m)
	}
}

// onManagementNodeLeft runs the listeners in CloudStack's order on the Cluster-Notification thread:
// AsyncJobManagerImpl (left-over jobs), ClusteredAgentManagerImpl (the peer's hosts),
// HighAvailabilityManagerImpl (the op_ha_work rows the peer had taken go back to the queue).
func (cm *clusterManager) onManagementNodeLeft(t *Thread, m *MSHostVO) {
	s := cm.s
	// AsyncJobManagerImpl.onManagementNodeLeft: cleanupLeftOverJobs(msHost.getId()) — the mshost
	// row id where the job columns hold msids (M1), so it matches no job. The fix passes getMsid().
	key := m.MSID
	if s.Defects[M1] {
		key = idKey(m.ID)
	}
	s.jobs.cleanupLeftOverJobsOf(t, key)
	// ClusteredAgentManagerImpl.onManagementNodeLeft: markHostsAsDisconnected(msid, lastPing)
	lastPing := s.Env.Now().Add(-s.Config.PingTimeout())
	for _, h := range s.DB.MarkHostsAsDisconnected(t.Name, m.MSID, lastPing) {
		s.Log(t, "INFO", HostObject(h), "Host %s of the management node %s that left is Disconnected and has no owner", h, m.MSID)
	}
	// HighAvailabilityManagerImpl.onManagementNodeLeft: releaseWorkItems(node.getMsid())
	if !mutated(MutHaLeftServerItemsKept) {
		s.DB.ReleaseHaWorkItems(m.MSID)
	}
	s.ha.wakeupIfWork()
}

// idKey is an mshost row id as the job columns would compare it.
func idKey(id int64) string { return strconv.FormatInt(id, 10) }

// globalLock is GlobalLock.getInternLock(name).lock(3): a cluster-wide try-lock a periodic task takes
// for one tick (AsyncJobManagerGC, Network.GC.Lock); the loser skips the tick. A single server needs
// no row for it.
func (s *Server) globalLock(t *Thread, name string) (release func(), ok bool) {
	if !s.Clustered {
		return func() {}, true
	}
	key := "global:" + name
	if !s.DB.TryLock(key, s.ID, t.Name) {
		return nil, false
	}
	return func() { s.DB.Unlock(key, s.ID, t.Name) }, true
}

// forward is ClusteredAgentAttache.send for a host another server owns: the request goes to the
// owner over the peer link and runs there on the owner's attache; the owner is read from the
// database on every send (findPeer). No owner, or an owner whose process is gone, is
// AgentUnavailable, as the Java's five failed connects are.
func (am *AgentManager) forward(t *Thread, h *HostVO, m Message, wait time.Duration) (*Message, error) {
	s := am.s
	if h.MSID == "" {
		return nil, &AgentUnavailableError{Host: h.ID, Reason: "Unable to find peer"}
	}
	peer := s.Peers(h.MSID)
	if peer == nil {
		return nil, &AgentUnavailableError{Host: h.ID, Reason: "Unable to reach the peer that the agent is connected"}
	}
	s.Log(t, "DEBUG", HostObject(h.ID), "Forwarding %s to the management server %s that host %s is connected to", m.Kind, h.MSID, h.ID)
	return peer.agents.send(t, h.ID, m, wait)
}

// PeerLinksClosed is what the other servers see when this server's process ends: every request they
// forwarded through it is left unanswered, and each caller learns it at once with OperationTimedout,
// as for any request a disconnect leaves unanswered (the host may have run it). The reference's
// choice: in the Java the caller learns it when its forwarding attache is replaced (the host
// reconnects elsewhere, seconds later) or its wait ends; the peer socket's close is the nearest
// moment. The server's own threads are gone with it.
func (s *Server) PeerLinksClosed() {
	am := s.agents
	var hosts []string
	pendings := map[string]map[int64]*pendingReq{}
	am.mu.Lock()
	for _, h := range slices.Sorted(maps.Keys(am.attaches)) {
		a := am.attaches[h]
		if len(a.pending) > 0 {
			hosts = append(hosts, h)
			pendings[h] = a.pending
			a.pending = map[int64]*pendingReq{}
		}
	}
	am.mu.Unlock()
	for _, h := range hosts {
		cancelPending(h, pendings[h])
	}
}
