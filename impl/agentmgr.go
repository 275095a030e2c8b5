package impl

import (
	"maps"
	"slices"
	"time"

	"github.com/csconform/csconform/model/host"
)

// AgentManager is AgentManagerImpl: the attaches (one live connection per host), request/answer
// routing, host status on connect, ping, ping timeout and disconnect.
type AgentManager struct {
	s *Server
	// mu guards attaches, seq, conns and every attache's pending and closed. It is never held across
	// a call into Env, a Pipe or a Hypervisor (see Server.mu).
	mu       coopMutex
	attaches map[string]*attache
	seq      int64
	conns    int
	// taskPool is the AgentTaskPool (_executor): direct.agent.load.size threads, on which the
	// DisconnectTasks run (disconnectWithInvestigation / WithoutInvestigation submit to it)
	taskPool permits
	// Investigate, when set, replaces the investigation of a host whose agent went away (tests): Up,
	// Down, Disconnected, or "" when it cannot be determined. nil: CheckHealthCommand, then the KVM
	// investigator (investigate.go).
	Investigate func(hostID string) host.Status
}

type attache struct {
	host    string
	pipe    Pipe
	pending map[int64]*pendingReq
	closed  bool
}

type pendingReq struct {
	done   Signal
	answer *Message
	err    error
	cmd    string
}

func newAgentManager(s *Server) *AgentManager {
	return &AgentManager{s: s, mu: coopMutex{env: s.Env, name: "the agent manager's lock"}, attaches: map[string]*attache{}}
}

// configure is AgentManagerImpl.configure's part that touches the database: every host the server
// owns, whatever its status, becomes Disconnected with no owner and a last ping one ping timeout ago
// (HostDaoImpl.markHostsAsDisconnected(_nodeId, lastPing): two direct UPDATEs keyed on the owner
// alone, not the host state machine). It runs in the configure phase, before any manager's start
// (CloudStackExtendedLifeCycle configures every bean before it starts one), so the host rows are
// reset before the left-over jobs, the HA work and the work items are looked at. A host another
// server owns, or none, is not touched: a host that went Alert or Down through the state machine
// already lost its owner there (HostTransit).
func (am *AgentManager) configure(t *Thread) {
	s := am.s
	s.Log(t, "INFO", "", "Ping Timeout is %s.", s.Config.PingTimeout())
	s.DB.MarkHostsAsDisconnected(t.Name, s.ID, s.Env.Now().Add(-s.Config.PingTimeout()))
}

func (am *AgentManager) start(t *Thread) {
	s := am.s
	s.Go("AgentAcceptor", am.acceptLoop)
	s.Go("AgentMonitor", am.monitorTask)
}

func (am *AgentManager) acceptLoop(t *Thread) {
	for {
		p, err := am.s.Net.Accept()
		if err != nil {
			return
		}
		am.mu.Lock()
		am.conns++
		am.mu.Unlock()
		am.s.Go(am.s.nextThread("AgentConnection"), func(t *Thread) { am.serve(t, p) })
	}
}

// serve reads one agent connection until it closes.
func (am *AgentManager) serve(t *Thread, p Pipe) {
	s := am.s
	var a *attache
	for {
		m, err := p.Recv()
		if err != nil {
			if a != nil && am.live(a) {
				am.submitDisconnectTask(a, host.AgentDisconnected)
			}
			return
		}
		switch {
		case m.Kind == MsgAnswer:
			if a != nil {
				if r := am.takePending(a, m.Seq); r != nil {
					ans := m // a copy: &m would move every message read onto the heap
					r.answer = &ans
					r.done.Fire()
				}
			}
		case m.Kind == MsgStartup:
			// A StartupCommand on a connection that already carries one is the agent reinitialising
			// (it was asked to by a PingAnswer, spec 3.13): a reconnect of the host on the same link.
			// The old attache goes, its outstanding requests are cancelled, the link stays open.
			if a != nil {
				am.retire(a)
			}
			a = &attache{host: m.HostID, pipe: p, pending: map[int64]*pendingReq{}}
			am.mu.Lock()
			old := am.attaches[m.HostID]
			am.attaches[m.HostID] = a
			am.mu.Unlock()
			if old != nil {
				am.removeAgent(old)
			}
			aa, mm := a, m
			s.Go(s.nextThread("AgentConnectTaskPool"), func(t *Thread) { am.connectAgent(t, aa, mm) })
		case a != nil && m.Kind == MsgShutdown:
			// handled before reading on, so the socket close that follows finds the host already gone
			am.processRequest(t, a, m)
		case a != nil:
			aa, mm := a, m
			s.Go(s.nextThread("AgentTaskPool"), func(t *Thread) { am.processRequest(t, aa, mm) })
		}
	}
}

// connectAgent: StartupAnswer with the ping interval, processConnect listeners, Ready → Up.
func (am *AgentManager) connectAgent(t *Thread, a *attache, m Message) {
	s := am.s
	s.DB.HostTransit(t.Name, a.host, host.AgentConnected, s.ID)
	s.DB.SetLastPinged(a.host, s.Env.Now())
	if err := a.pipe.Send(Message{Seq: m.Seq, Kind: MsgAnswer, Result: true, PingInterval: s.Config.PingInterval()}); err != nil {
		return
	}
	// processConnect: VMMI resets power tracking for the host.
	s.Log(t, "INFO", HostObject(a.host), "Reset VM power state sync for host: %s", a.host)
	s.DB.ResetHostPowerStateTracking(a.host)
	if m.HasReport {
		s.processHostVmStateReport(t, a.host, m.Report, m.CollectedAt, mutated(MutConnectReportForced))
	}
	if _, err := am.send(t, a.host, Message{Kind: MsgReady}, 30*time.Second); err != nil {
		return
	}
	if am.current(a) {
		s.DB.HostTransit(t.Name, a.host, host.Ready, s.ID)
	}
}

func (am *AgentManager) processRequest(t *Thread, a *attache, m Message) {
	s := am.s
	switch m.Kind {
	case MsgPing:
		if s.DB.Mocks.pingFails(a.host) {
			// the simulator's agent has no status to send: the ping never reaches the server, and
			// the host falls behind on ping (the agent here still gets its answer, as no link breaks)
			s.Log(t, "DEBUG", HostObject(a.host), "Unable to get current status on %s: simulator mock PingCommand result:fail", a.host)
			_ = a.pipe.Send(Message{Seq: m.Seq, Kind: MsgAnswer, Result: true})
			return
		}
		s.DB.SetLastPinged(a.host, s.Env.Now())
		if m.OutOfBand {
			s.Log(t, "DEBUG", HostObject(a.host), "Ping from Routing host %s (out of band, collected %s)", a.host, m.CollectedAt.Format("15:04:05.000"))
		}
		// VMMI.processCommands: the report, then the stall scan, before the PingAnswer.
		if m.HasReport {
			s.processHostVmStateReport(t, a.host, m.Report, m.CollectedAt, m.OutOfBand)
		}
		s.scanStalledVMInTransitionStateOnUpHost(t, a.host)
		answer := Message{Seq: m.Seq, Kind: MsgAnswer, Result: true}
		if h := s.DB.Host(a.host); h != nil && h.Status != host.Up && am.current(a) {
			if h.Status != host.Connecting {
				answer.SendStartup = true
			}
		}
		_ = a.pipe.Send(answer)
	case MsgShutdown:
		s.Log(t, "INFO", HostObject(a.host), "Host %s is disconnecting with event %s", a.host, host.ShutdownRequested)
		am.handleDisconnectWithoutInvestigation(t, a, host.ShutdownRequested)
		_ = a.pipe.Send(Message{Seq: m.Seq, Kind: MsgAnswer, Result: true})
	default:
		_ = a.pipe.Send(Message{Seq: m.Seq, Kind: MsgAnswer, Result: false, Details: "unsupported " + m.Kind})
	}
}

// Send is AgentManagerImpl.send: a synchronous command with wait (0 = the `wait` setting).
func (am *AgentManager) Send(t *Thread, hostID string, m Message, wait time.Duration) (*Message, error) {
	return am.send(t, hostID, m, wait)
}

// send is AgentManagerImpl.send with ClusteredAgentManagerImpl.getAttache: a request goes through
// the host's live attache whatever the host row says (AgentAttache.send checks only maintenance);
// only a host with no attache here is refused, by its status.
func (am *AgentManager) send(t *Thread, hostID string, m Message, wait time.Duration) (*Message, error) {
	s := am.s
	if wait <= 0 {
		wait = s.Config.Seconds("wait")
	}
	am.mu.Lock()
	a := am.attaches[hostID]
	closed := a == nil || a.closed
	am.mu.Unlock()
	if closed && s.Clustered {
		// ClusteredAgentManagerImpl.getAttache: a host Up and owned by another server gets a
		// forwarding attache (isHostOwnerSwitched)
		if h := s.DB.Host(hostID); h != nil && h.Status == host.Up && h.MSID != "" && h.MSID != s.ID {
			return am.forward(t, h, m, wait)
		}
	}
	if closed {
		if h := s.DB.Host(hostID); h != nil && h.Status != host.Up {
			return nil, &AgentUnavailableError{Host: hostID, Reason: "Host with specified id is not in the right state: " + string(h.Status)}
		}
		return nil, &AgentUnavailableError{Host: hostID, Reason: "agent not logged into this management server"}
	}
	r := &pendingReq{done: s.Env.NewSignal(), cmd: m.Kind}
	am.mu.Lock()
	if a.closed { // removed since the check above (only possible with real concurrency)
		am.mu.Unlock()
		return nil, &AgentUnavailableError{Host: hostID, Reason: "agent not logged into this management server"}
	}
	am.seq++
	m.Seq = am.seq
	m.HostID = hostID
	a.pending[m.Seq] = r
	am.mu.Unlock()
	if e, ok := s.DB.Mocks.simulate(hostID, m.Kind); ok {
		// the simulator's agent runs the mock before the command, while this send waits as usual
		am.mocked(t, a, m, e)
	} else if err := a.pipe.Send(m); err != nil {
		am.takePending(a, m.Seq)
		return nil, &AgentUnavailableError{Host: hostID, Reason: "Unable to send: " + err.Error()}
	}
	// AgentAttache.send(req, wait): up to two rounds of wait. After the first, a command gives up
	// only if another one is the attache's current sequence ("Waited too long", isActive false);
	// nothing here is sent in sequence (KVM's getExecuteInSequence is false), so no sequence is ever
	// current and every command waits a second round, then times out (isActive true) after 2 × wait.
	if !r.done.Wait(wait) {
		s.Log(t, "DEBUG", HostObject(hostID), "Seq %s-%d: Waiting some more time because this is the current command", hostID, m.Seq)
		if !r.done.Wait(wait) {
			am.takePending(a, m.Seq)
			return nil, &OperationTimedoutError{Host: hostID, Cmd: m.Kind}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.answer, nil
}

// mocked runs a command under a simulator mock (SimulatorManagerImpl.simulate): its wait, then a
// failed Answer in place of the command, or the command sent to the agent. The wait runs beside the
// sender, so a wait past the command's own times the send out as a slow agent would.
func (am *AgentManager) mocked(t *Thread, a *attache, m Message, e mockEffect) {
	s := am.s
	s.Log(t, "DEBUG", HostObject(a.host), "Seq %s-%d: %s under simulator mock %d (wait %s, fail %v)", a.host, m.Seq, m.Kind, e.id, e.wait, e.fail)
	run := func() {
		if !e.fail {
			if e.count {
				s.DB.Mocks.used(e.id)
			}
			if err := a.pipe.Send(m); err != nil {
				if p := am.takePending(a, m.Seq); p != nil {
					p.err = &AgentUnavailableError{Host: a.host, Reason: "Unable to send: " + err.Error()}
					p.done.Fire()
				}
			}
			return
		}
		if e.count {
			s.DB.Mocks.used(e.id)
		}
		if p := am.takePending(a, m.Seq); p != nil {
			p.answer = &Message{Seq: m.Seq, Kind: MsgAnswer, HostID: a.host, Result: false, Details: e.detail}
			p.done.Fire()
		}
	}
	if e.wait <= 0 {
		run()
		return
	}
	s.Go(s.nextThread("SimulatorMock"), func(*Thread) {
		s.Env.Sleep(e.wait)
		run()
	})
}

// current says whether a is the host's attache.
func (am *AgentManager) current(a *attache) bool {
	am.mu.Lock()
	defer am.mu.Unlock()
	return am.attaches[a.host] == a
}

// live says whether a is the host's attache and still open.
func (am *AgentManager) live(a *attache) bool {
	am.mu.Lock()
	defer am.mu.Unlock()
	return am.attaches[a.host] == a && !a.closed
}

// takePending removes and returns the request waiting for seq (nil if none: answered, cancelled or
// timed out already), so exactly one of answer, cancel and time-out completes a request.
func (am *AgentManager) takePending(a *attache, seq int64) *pendingReq {
	am.mu.Lock()
	defer am.mu.Unlock()
	r, ok := a.pending[seq]
	if !ok {
		return nil
	}
	delete(a.pending, seq)
	return r
}

// detach marks a closed, drops it from the attaches and hands back its outstanding requests; false
// if it was closed already.
func (am *AgentManager) detach(a *attache) (map[int64]*pendingReq, bool) {
	am.mu.Lock()
	defer am.mu.Unlock()
	if a.closed {
		return nil, false
	}
	a.closed = true
	if am.attaches[a.host] == a {
		delete(am.attaches, a.host)
	}
	pending := a.pending
	a.pending = map[int64]*pendingReq{}
	return pending, true
}

// removeAgent drops the attache, closes its connection and cancels its outstanding requests as
// agent-unavailable.
func (am *AgentManager) removeAgent(a *attache) {
	pending, ok := am.detach(a)
	if !ok {
		return
	}
	a.pipe.Close()
	cancelPending(a.host, pending)
}

// retire drops the attache and cancels its outstanding requests but leaves its connection open: the
// agent re-sent its StartupCommand on it and a new attache takes the link over.
func (am *AgentManager) retire(a *attache) {
	if pending, ok := am.detach(a); ok {
		cancelPending(a.host, pending)
	}
}

func cancelPending(hostID string, pending map[int64]*pendingReq) {
	for _, seq := range slices.Sorted(maps.Keys(pending)) {
		r := pending[seq]
		// AgentAttache.send: a request already sent that the disconnect leaves unanswered ends in
		// OperationTimedoutException, not AgentUnavailableException — the host may have run it.
		r.err = &OperationTimedoutError{Host: hostID, Cmd: r.cmd}
		r.done.Fire()
	}
}

func (am *AgentManager) handleDisconnectWithoutInvestigation(t *Thread, a *attache, ev host.Event) {
	am.removeAgent(a)
	am.s.DB.HostTransit(t.Name, a.host, ev, "")
}

// disconnectWithInvestigation is handleDisconnectWithInvestigation (spec 3.14 step 6, investigate.go).
func (am *AgentManager) disconnectWithInvestigation(t *Thread, a *attache, ev host.Event) {
	am.handleDisconnectWithInvestigation(t, a, ev)
}

// submitDisconnectTask is disconnectWithInvestigation's `_executor.submit(new DisconnectTask(…))`: the
// task runs on the AgentTaskPool, a fixed pool of direct.agent.load.size threads (AgentManagerImpl.
// configure) fed by an unbounded queue, so beyond that many investigations at once a disconnect waits
// for a thread, in submission order. Its thread is named when it is submitted.
func (am *AgentManager) submitDisconnectTask(a *attache, ev host.Event) {
	s := am.s
	s.Go(s.nextThread("DisconnectTask"), func(t *Thread) {
		am.taskPool.acquire(s.Env, s.Config.Int("direct.agent.load.size"))
		defer am.taskPool.release()
		am.disconnectWithInvestigation(t, a, ev)
	})
}

// monitorTask is MonitorTask: agents behind on ping are disconnected with investigation.
func (am *AgentManager) monitorTask(t *Thread) {
	s := am.s
	for {
		s.Env.Sleep(s.Config.PingInterval())
		cut := s.Env.Now().Add(-s.Config.PingTimeout())
		if mutated(MutMonitorOnePing) {
			cut = s.Env.Now().Add(-s.Config.PingInterval())
		}
		var behind []*attache
		hosts := s.DB.Hosts()
		am.mu.Lock()
		for _, h := range hosts {
			if a := am.attaches[h.ID]; a != nil && h.LastPinged.Before(cut) {
				behind = append(behind, a)
			}
		}
		am.mu.Unlock()
		for _, a := range behind {
			if h := s.DB.Host(a.host); skipsInvestigation(h) {
				s.Log(t, "INFO", HostObject(a.host), "Ping timeout but agent %s is in resource state of %s, so no investigation", a.host, h.ResourceState)
				am.handleDisconnectWithoutInvestigation(t, a, host.ShutdownRequested)
				continue
			}
			s.Log(t, "INFO", HostObject(a.host), "Ping timeout for agent %s, do investigation", a.host)
			am.submitDisconnectTask(a, host.PingTimeout) // the investigation waits on commands
		}
	}
}
