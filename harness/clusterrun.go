package harness

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// clusterRun is the World of an in-process Cluster: the simulator, live and libvirt worlds (the
// server runs in the harness's process: its records and history are at hand, and the checker runs
// after every step of the world).
type clusterRun struct {
	c       *Cluster
	sc      *Scenario
	lim     Limits
	caps    Capabilities
	start   time.Time
	pending atomic.Int32 // async steps still running
	// ctx and interrupted: a real world ended by ctx says what its Close removed.
	ctx         context.Context
	interrupted string
}

var _ World = (*clusterRun)(nil)

// openCluster opens an in-process world: newCluster builds the simulator's cluster or a real one.
func openCluster(sc *Scenario, defects impl.Switches, seed uint64, lim Limits, ctx context.Context, caps Capabilities, interrupted string, newCluster func(Options) (*Cluster, error)) (World, error) {
	if lim.Scheduler.Kind == sim.Random {
		lim.Scheduler = sc.Scheduler
	}
	c, err := newCluster(Options{Seed: seed, Hosts: sc.Hosts, Defects: defects, Config: sc.Config, Limits: lim, ManagementServers: sc.ManagementServers})
	if err != nil {
		return nil, stopped(err, lim)
	}
	return &clusterRun{c: c, sc: sc, lim: lim, caps: caps, start: c.Now(), ctx: ctx, interrupted: interrupted}, nil
}

func (s *clusterRun) Begin(res *Result) {
	res.cluster, res.Rec, res.Started = s.c, s.c.Rec, s.start
	if s.lim.Scheduler.Kind != sim.Random && s.caps.Can(VirtualTime) {
		res.Scheduler = s.lim.Scheduler.String()
	}
}

// Drive runs fn as the world's task "scenario" and the world until it returned, for 24 h of its
// time at most (or the run's bound of simulated time).
func (s *clusterRun) Drive(fn func()) error {
	c := s.c
	var done atomic.Bool
	c.Go("scenario", func() {
		defer done.Store(true)
		fn()
	})
	maxSim := s.lim.maxSimTime()
	if err := c.w.runUntil(s.start.Add(min(24*time.Hour, maxSim)), done.Load); err != nil {
		return stopped(err, s.lim)
	}
	if !done.Load() {
		if maxSim < 24*time.Hour {
			return &StoppedError{Reason: fmt.Sprintf("scenario %s stopped at its bound of %s of simulated time (--max-sim-time) before its last step", s.sc.Name, maxSim)}
		}
		return fmt.Errorf("scenario %s did not finish within 24 h of virtual time", s.sc.Name)
	}
	return nil
}

// Setup: the seed sets where the scenario falls against the server's fixed-rate tasks (heartbeat
// 2 s, job GC 10 s, pings), as the wall clock does on a real server; then the networks.
func (s *clusterRun) Setup() error {
	c := s.c
	c.Sleep(c.w.offset())
	c.w.setup(true)
	defer c.w.setup(false)
	return c.setup(s.sc)
}

// Prime: a scenario's prime steps run as its set-up (the world's scaled timings, 1 s router boots).
func (s *clusterRun) Prime(on bool) { s.c.w.setup(on) }

func (s *clusterRun) Settle() error {
	settle := s.sc.Settle
	if settle <= 0 {
		settle = 3 * time.Minute
	}
	maxSim := s.lim.maxSimTime()
	if at := s.c.Now().Sub(s.start); at+settle > maxSim {
		return &StoppedError{Reason: fmt.Sprintf("scenario %s: its settle of %s after the last step (at +%s) would pass the run's bound of %s of simulated time (--max-sim-time)", s.sc.Name, settle, at.Round(time.Second), maxSim)}
	}
	if err := s.c.settle(settle); err != nil {
		return stopped(err, s.lim)
	}
	return nil
}

// Judge runs the end-of-run detectors the world declares (Capabilities.Runs): the simulator lets the
// cloud run on alone for as long as liveness needs (a real world would wait half an hour of real
// time); every world compares its incremental and full checks.
func (s *clusterRun) Judge() error {
	c := s.c
	if s.caps.Runs(invariant.StuckInTransition) {
		if err := c.checkLiveness(); err != nil {
			return stopped(err, s.lim)
		}
	}
	if s.caps.Runs(invariant.LeftServerJob) {
		c.checkLeftServerJobs()
	}
	if s.caps.Runs(invariant.UnexplainedStop) {
		c.reportAll(detect.UnexplainedStops(c.Rec.History().All(), c.Rec.faults()))
	}
	if st, ok := c.storage(); ok && s.caps.Runs(invariant.StorageLeak) {
		for _, v := range detect.StorageLeaks(c.Rec.History().All(), st, c.Now()) {
			c.report(v)
		}
	}
	// judged on the snapshot, the observation the invariants share (model/invariant/destroyed.go)
	for _, v := range invariant.CheckDestroyedAssertedDomains(c.Snapshot()) {
		c.report(v)
	}
	c.checkGuards()
	c.reportAll(detect.HaPromise(c.Rec.History().All(), c.haEnabled))
	c.reportAll(detect.HaHandOver(c.Rec.History().All(), c.haEnabled, c.Config.Bool("ha.vm.restart.hostup")))
	if m := c.CheckMismatch(); m != "" {
		return fmt.Errorf("scenario %s: %s", s.sc.Name, m)
	}
	return nil
}

// Finish fills the table from the history and the server's log.
func (s *clusterRun) Finish(res *Result) {
	fillTable(res, s.c.Rec, s.c)
	// a copy, taken between two checks: a real world's checker task runs on until Close and
	// updates the violations (when each healed) while Run compares them with the expectations
	s.c.checkMu.Lock()
	res.Violations = slices.Clone(s.c.Violations)
	s.c.checkMu.Unlock()
	res.Guarded = s.c.guarded
	res.VirtualEnd = s.c.Now().Sub(s.start)
	res.Steps = s.c.w.steps()
}

func (s *clusterRun) LinearBounds() (linear.Bounds, bool)  { return LinearBounds(s.c.Config), true }
func (s *clusterRun) VMState(name string) (vm.State, bool) { return s.c.VMState(name) }

func (s *clusterRun) Close(res *Result, err error) (*Result, error) {
	s.c.Close()
	if err != nil && s.ctx != nil && s.ctx.Err() != nil && s.interrupted != "" {
		return nil, fmt.Errorf("interrupted (%v); %s", err, s.interrupted)
	}
	return res, err
}

func (s *clusterRun) Now() time.Time                  { return s.c.Now() }
func (s *clusterRun) Wait(d time.Duration) error      { s.c.Sleep(d); return nil }
func (s *clusterRun) Pause(d time.Duration) error     { s.c.w.pause(d); return nil }
func (s *clusterRun) UntilPoll() time.Duration        { return 50 * time.Millisecond }
func (s *clusterRun) UntilLimit() time.Duration       { return time.Hour }
func (s *clusterRun) History() Events                 { return s.c.Rec.History() }
func (s *clusterRun) Fault(st Step) error             { return faults.Run(s.c, st.FaultSpec()) }
func (s *clusterRun) SetConfig(key, val string) error { return s.c.SetConfig(key, val) }
func (s *clusterRun) Ended() error                    { return nil } // the simulator is stopped from outside its tasks

func (s *clusterRun) Async(name string, fn func()) {
	s.pending.Add(1)
	s.c.Go(name, func() { defer s.pending.Add(-1); fn() })
}

func (s *clusterRun) AwaitAsync() {
	for s.pending.Load() > 0 {
		s.c.Sleep(time.Second)
	}
}

// NewCase fills the row with the VM's first network (the step's, or its record's) and the network's
// age, so the table says what the cleanup could have raced with.
func (s *clusterRun) NewCase(st Step, client string) CaseResult {
	c := s.c
	cr := CaseResult{Case: st.Case, Op: st.Op, Path: pathOf(st.Op), VM: st.VM, client: client}
	if len(st.Networks) > 0 {
		cr.Network = st.Networks[0]
	} else if st.Op == "deleteNetwork" {
		cr.Network = st.Network
	} else if id, err := c.VMID(st.VM); err == nil {
		if v := c.DB.VM(id); v != nil && len(v.NetworkIDs) > 0 {
			for _, n := range c.NetworkNames() {
				if nid, _ := c.NetworkID(n); nid == v.NetworkIDs[0] {
					cr.Network = n
				}
			}
		}
	}
	if cr.Network != "" {
		nid, _ := c.NetworkID(cr.Network)
		cr.networkID = nid
		if n := c.DB.Network(nid); n != nil {
			cr.AgeMinutes = int(c.Now().Sub(n.Created).Minutes())
		}
	}
	if st.Server != "" {
		if c.via == nil {
			c.via = map[string]string{}
		}
		c.via[client] = st.Server
	}
	return cr
}

// The operations' failures are outcomes in the history, never errors of the run.
func (s *clusterRun) CreateNetwork(client, name string) error {
	_ = s.c.CreateNetwork(client, name, false)
	return nil
}

func (s *clusterRun) DeleteNetwork(client, name string) error {
	_ = s.c.DeleteNetwork(client, name)
	return nil
}

func (s *clusterRun) Deploy(client string, st Step) error {
	_ = s.c.DeployHA(client, st.VM, st.Networks, st.Host, st.HA)
	return nil
}

func (s *clusterRun) Allocate(client string, st Step) error {
	_ = s.c.Allocate(client, st.VM, st.Networks)
	return nil
}

func (s *clusterRun) VMOp(client string, st Step) error {
	_ = s.c.VMOp(client, st.Op, st.VM, st.Host)
	return nil
}

func (s *clusterRun) UntilObject(st Step) (obj, instance string, ok bool) {
	c := s.c
	switch st.Until {
	case "start-sent", "running":
		if id, err := c.VMID(st.VM); err == nil {
			return VMObj(id), c.DB.VM(id).Name, true
		}
	case "implementing":
		if id, err := c.NetworkID(st.Network); err == nil {
			return impl.NetworkObject(id), "", true
		}
	case "host-up":
		return impl.HostObject(st.Host), "", true
	case "log": // about the step's VM, network or host, if it names one
		switch {
		case st.VM != "":
			if id, err := c.VMID(st.VM); err == nil {
				return VMObj(id), "", true
			}
			return "", "", false
		case st.Network != "":
			if id, err := c.NetworkID(st.Network); err == nil {
				return impl.NetworkObject(id), "", true
			}
			return "", "", false
		case st.Host != "":
			return impl.HostObject(st.Host), "", true
		}
		return "", "", true
	}
	return "", "", false
}

// Records are the cluster's database; a StartCommand is in the history.
func (s *clusterRun) Records() Records { return clusterRecords{s.c} }

type clusterRecords struct{ c *Cluster }

func (r clusterRecords) VMState(name string) (vm.State, bool) { return r.c.VMState(name) }
func (r clusterRecords) NetworkState(name string) (network.State, bool) {
	id, err := r.c.NetworkID(name)
	if err != nil {
		return "", false
	}
	return r.c.DB.Network(id).State, true
}
func (r clusterRecords) HostStatus(name string) (host.Status, bool) {
	if h := r.c.DB.Host(name); h != nil {
		return h.Status, true
	}
	return "", false
}
func (clusterRecords) StartSent(string) bool { return false }

// reportAll reports the violations a detector found at the end of a run, in order.
func (c *Cluster) reportAll(vs []invariant.Violation) {
	for _, v := range vs {
		c.report(v)
	}
	if len(vs) > 0 {
		SortViolations(c.Violations)
	}
}

// haEnabled reads a VM's ha_enabled from the records (vm:<id>).
func (c *Cluster) haEnabled(obj string) bool {
	id, err := strconv.ParseInt(strings.TrimPrefix(obj, "vm:"), 10, 64)
	if err != nil {
		return false
	}
	v := c.DB.VM(id)
	return v != nil && v.HAEnabled
}
