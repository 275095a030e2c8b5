package harness

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/vm"
)

// Options say what cluster to build.
type Options struct {
	Seed    uint64
	Hosts   []string
	Defects impl.Switches
	Config  map[string]string
	Limits  Limits
	// ManagementServers is how many servers share the database (0 or 1: one; simulator only).
	ManagementServers int
}

// Limits bound one run, so that a careless scenario (a settle of a million hours, a hundred thousand
// steps, thousands of concurrent deploys) cannot run for hours, and let Ctrl-C stop a simulated run
// between two scheduler steps. The zero value is the defaults.
type Limits struct {
	// Ctx, when done, stops the run between two scheduler steps.
	Ctx context.Context
	// MaxSteps bounds the simulator's steps (0: DefaultMaxSteps).
	MaxSteps uint64
	// MaxSimTime bounds the run's virtual time from the scenario's start, settle included (0:
	// DefaultMaxSimTime).
	MaxSimTime time.Duration
	// Scheduler is the simulator's strategy (the zero value: random among wake-ups due together,
	// no preemption).
	Scheduler sim.Strategy
}

// The default bounds: a simulated day of a cloud of a few hundred hosts fits in them (a seed
// scenario takes a few thousand steps for half an hour of virtual time).
const (
	DefaultMaxSteps   = 20_000_000
	DefaultMaxSimTime = 48 * time.Hour
)

func (l Limits) maxSteps() uint64 {
	if l.MaxSteps == 0 {
		return DefaultMaxSteps
	}
	return l.MaxSteps
}

func (l Limits) maxSimTime() time.Duration {
	if l.MaxSimTime <= 0 {
		return DefaultMaxSimTime
	}
	return l.MaxSimTime
}

// StoppedError is a run that did not finish: interrupted, or stopped at one of its Limits. The
// Result returned beside it holds what the run had until then.
type StoppedError struct {
	Reason      string
	Interrupted bool
}

func (e *StoppedError) Error() string { return e.Reason }

// Violation is an invariant violation with the steps that led to it.
type Violation struct {
	invariant.Violation
	Trail []TrailEvent `json:"trail"`
	// Lasting: the invariant judges a state (invariant.Lasting), which may heal; for such a violation
	// HealedAt is when the checks last found it gone — zero: still present at the last check, which
	// at the end of a run is damage that stays.
	Lasting  bool      `json:"lasting"`
	HealedAt time.Time `json:"healedAt,omitzero"`
}

// violationKey: one report per object and kind of violation (an address free in the pool, then held
// twice).
func violationKey(v invariant.Violation) string {
	return fmt.Sprintf("%s|%s|%v", v.Invariant, v.Object, strings.Contains(v.Message, "free"))
}

// Cluster is a management server, its hosts and their agents, in the simulator (NewSimCluster), the
// live world (NewLiveCluster) or on real domains (NewLibvirtCluster); what only the simulator has
// (its scheduler, fabric and hosts) is its world's (simWorld).
type Cluster struct {
	w       substrate
	checkMu sync.Mutex // one check at a time (real worlds check from their own task)
	HostIDs []string
	DB      *impl.DB
	Config  *impl.Config
	Defects impl.Switches
	Rec     *Recorder

	Violations []Violation
	tracker    *invariant.Tracker
	inc        *incCheck // the simulator's incremental checker (nil: the full check after every step)
	haHold     haHolds   // which VMs' power reports an HA item held at the last look, and when a hold ended
	// sortedEvents: the history's first sortedEvents events are known to be in time order
	sortedEvents int
	// logIdx: the positions of the first logIdxN events' log lines, by object (logsDuring)
	logIdx     map[string][]int
	logIdxN    int
	seen       map[string]bool
	livenessAt time.Time // the next liveness look of check (the simulator's)
	// vmIDs, netIDs and deletedNets are the scenario's names, under namesMu: in a real-time world an
	// async step's deploy writes one while an until condition reads it.
	namesMu sync.Mutex
	vmIDs   map[string]int64
	netIDs  map[string]int64
	// deletedNets: the networks a deleteNetwork removed (refuseDeleted)
	deletedNets map[int64]bool
	// procMu guards which processes run: the server incarnation and its stops, the agents, the
	// removed hosts. In a real-time world a fault's task writes them while the checker, the clients'
	// tasks, the server's threads (runningServer) and the self-fence monitor read them.
	procMu  sync.Mutex
	server  *impl.Server
	agents  map[string]*impl.Agent
	msDown  bool
	msDowns []span // ms1's stops (ServerStop to ServerStart; to zero while down)
	// removedHosts are the hosts an operator removed (RemoveHost): their agents are not started again.
	// Kept here rather than read from the hosts table, whose reads are scheduling points.
	removedHosts map[string]bool
	msUpSince    time.Time // when the current server incarnation started
	// agentStarted: when each host's current agent started (its KVMHAMonitor's first write)
	agentStarted map[string]time.Time
	routerBoot   time.Duration
	api          ClientAPI // nil: the direct path (see client.go)
	// servers is how many management servers share the database; peers are ms2 … msN (peers.go).
	servers int
	peers   []*peerServer
	apiTurn int               // the balancer's next server (apiServer)
	via     map[string]string // a client's server, when its step names one
	// guardCfgs: the configuration the transition guards read, from when (nil: never changed)
	guardCfgs []detect.GuardConfigAt
	guarded   map[string]int // the guards' decided transitions, once judged
	// monitoring: the hosts whose KVMHAMonitor runs a self-fence countdown (selffence.go)
	monitoring map[string]bool
}

// NewSimCluster builds a cluster in the simulator and runs it until every host is Up.
func NewSimCluster(o Options) (*Cluster, error) {
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"h1"}
	}
	cfg, err := impl.NewConfig(o.Config)
	if err != nil {
		return nil, err
	}
	mode, err := checkModeFromEnv()
	if err != nil {
		return nil, err
	}
	s := sim.NewScheduler(o.Seed)
	s.UseStrategy(o.Limits.Scheduler)
	c := &Cluster{
		Config: cfg, Defects: o.Defects, tracker: invariant.NewTracker(), seen: map[string]bool{}, vmIDs: map[string]int64{}, netIDs: map[string]int64{}}
	sw := &simWorld{c: c, sched: s, fabric: sim.NewFabric(s), hosts: map[string]*sim.Host{}}
	c.w = sw
	c.Rec = NewRecorder(s.Now)
	c.DB = impl.NewDB(s, c.Rec)
	if mode != checkFull {
		c.inc = newIncCheck(mode == checkCompare)
		c.DB.Watch()
	}
	if o.ManagementServers > MaxManagementServers {
		return nil, fmt.Errorf("managementServers %d: at most %d", o.ManagementServers, MaxManagementServers)
	}
	c.servers = max(o.ManagementServers, 1)
	c.startServer()
	for _, h := range o.Hosts {
		if _, dup := sw.hosts[h]; dup {
			return nil, fmt.Errorf("host %q is listed twice", h)
		}
		hv := sim.NewHost(s, h)
		def := hv.BootDelay
		hv.BootDelay = func(spec impl.DomainSpec) time.Duration {
			if spec.Type == "DomainRouter" && c.routerBoot > 0 {
				return c.routerBoot
			}
			return def(spec)
		}
		hv.Peers = func(id string) *sim.Host { return sw.hosts[id] }
		sw.hosts[h] = hv
		c.HostIDs = append(c.HostIDs, h)
		if c.servers == 1 {
			c.startAgent(h)
		}
	}
	if c.servers > 1 { // the peers listen before the agents dial
		c.startPeers(c.servers)
		for _, h := range c.HostIDs {
			c.startAgent(h)
		}
	}
	s.AfterStep = c.check
	s.MaxSteps = o.Limits.maxSteps()
	if ctx := o.Limits.Ctx; ctx != nil {
		s.Interrupted = func() error { return context.Cause(ctx) }
	}
	deadline := s.Now().Add(5 * time.Minute)
	if err := s.RunUntil(deadline, c.allUp); err != nil {
		return nil, err
	}
	if !c.allUp() {
		return nil, fmt.Errorf("hosts did not come up within 5 minutes of virtual time")
	}
	return c, nil
}

func (c *Cluster) startServer() {
	srv := c.w.newServer()
	if c.servers > 1 {
		srv.Clustered, srv.Peers = true, c.runningServer
	}
	c.procMu.Lock()
	c.server = srv
	c.procMu.Unlock()
	// not under procMu: the server's threads ask runningServer as soon as they run
	srv.Start()
	c.procMu.Lock()
	c.msDown = false
	c.msUpSince = c.Now()
	c.procMu.Unlock()
}

// Server is the current management server incarnation (ms1; the last one while it is down).
func (c *Cluster) Server() *impl.Server {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return c.server
}

// serverDown says whether ms1 is down (between ServerStop and ServerStart).
func (c *Cluster) serverDown() bool {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return c.msDown
}

// serverStops is how many times ms1 was stopped.
func (c *Cluster) serverStops() int {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return len(c.msDowns)
}

// agent is host h's current agent (nil: none yet).
func (c *Cluster) agent(h string) *impl.Agent {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return c.agents[h]
}

// agentList is every host's current agent, in no order.
func (c *Cluster) agentList() []*impl.Agent {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	out := make([]*impl.Agent, 0, len(c.agents))
	for _, a := range c.agents {
		out = append(out, a)
	}
	return out
}

// ghostBound is GhostBound while power sync can work: 0 (the ghost-record check paused) while the
// management server is down and until its reports have had ReportGrace to come in after it is back —
// nobody can notice a ghost meanwhile, as nobody can on a host that is away.
//
// The same holds while a disruptive host fault is on (a cut link, an agent away: the host may still
// be Up in its row until the server's ping timeout, but no report gets through) and for ReportGrace
// after it ends. Pausing the whole check, not only that host's VMs, keeps the full and incremental
// checkers and the VM model on one rule (their ages restart together).
func (c *Cluster) ghostBound(now time.Time) time.Duration {
	grace := ReportGrace(c.Config)
	c.procMu.Lock()
	down, upSince := c.msDown, c.msUpSince
	c.procMu.Unlock()
	if down || now.Sub(upSince) < grace || c.Rec.hostFaultWithin(now, grace) {
		return 0
	}
	return GhostBound(c.Config)
}

func (c *Cluster) startAgent(h string) {
	a := c.w.newAgent(h)
	c.procMu.Lock()
	if c.agents == nil {
		c.agents = map[string]*impl.Agent{}
	}
	c.agents[h] = a
	if c.agentStarted == nil {
		c.agentStarted = map[string]time.Time{}
	}
	c.agentStarted[h] = c.Now()
	c.procMu.Unlock()
	a.Start()
}

func (c *Cluster) allUp() bool {
	for _, h := range c.HostIDs {
		if hv := c.DB.Host(h); hv != nil && hv.Status == host.Removed {
			continue // gone for good: nothing to wait for
		} else if hv == nil || hv.Status != host.Up {
			return false
		}
	}
	return true
}

// Close ends every task of the simulation.
func (c *Cluster) Close() { c.w.close() }

// EndSetup ends the cluster's setup outside a scenario run: the scenario's own configuration (the
// network GC's timing) applies from now on, as it does once Run has created a scenario's networks.
func (c *Cluster) EndSetup() { c.w.setup(false) }

// Now is the world's time (virtual in the simulator).
func (c *Cluster) Now() time.Time { return c.w.now() }

// Go runs fn as a task of the world (a client, a fault, a scenario).
func (c *Cluster) Go(name string, fn func()) { c.w.goTask(name, fn) }

// Sleep is the world's time (from a task).
func (c *Cluster) Sleep(d time.Duration) { c.w.sleep(d) }

// ---- checking

// check is the check after a step that changed something: in the simulator, of what it changed.
func (c *Cluster) check() {
	// liveness, once a simulated minute: what stays in a transitional state past its bound while the
	// cloud is left alone (no fault on, none within the bound) is stuck even if it is freed before the
	// run ends — an API job waits for its work job without a timeout, as OutcomeImpl.get() does, so
	// C7's hour can pass inside a step. It reads the records only: the history is unchanged unless
	// something is stuck.
	if now := c.Now(); !now.Before(c.livenessAt) {
		c.livenessAt = now.Add(time.Minute)
		// one walk a look: what is overdue now, and when the next thing falls due (the next look
		// comes then if sooner: a duty bound of 80 s between two looks a minute apart could pass
		// unseen). A fault still on excuses everything (its quiet is now), a host's fault no duty.
		_, overdue, due := c.transitionStatus(now)
		quiet, ok := c.Rec.quietSince()
		serverQuiet, serverOK := c.Rec.serverQuietSince()
		if overdue && (ok || serverOK) {
			if !ok {
				quiet = now
			}
			if !serverOK {
				serverQuiet = now
			}
			c.reportOverdue(quiet, serverQuiet)
		}
		if !due.IsZero() && due.Before(c.livenessAt) {
			c.livenessAt = due
		}
	}
	if !c.Rec.takeDirty() {
		return
	}
	c.checkWith(false)
}

// checkNow is a full check (the end of a run, a real world's look).
func (c *Cluster) checkNow() { c.checkWith(true) }

func (c *Cluster) checkWith(full bool) {
	c.checkMu.Lock()
	defer c.checkMu.Unlock()
	if c.inc != nil {
		c.checkIncremental(full)
		return
	}
	snap := c.Snapshot()
	c.Rec.checked(len(snap.NetworkChanges))
	c.Rec.Observe(snap)
	c.judge(c.w.confirm(c.tracker.Check(snap)), snap.Time)
}

// CheckMismatch is, with CSCONFORM_CHECK=compare, the first difference between the incremental and
// the full check ("" none).
func (c *Cluster) CheckMismatch() string {
	if c.inc == nil {
		return ""
	}
	return c.inc.mismatch
}

// judge reports the violations a check found and notes when each lasting one was last found gone.
func (c *Cluster) judge(vs []invariant.Violation, now time.Time) {
	added := false
	present := map[string]bool{}
	for _, v := range vs {
		present[violationKey(v)] = true
		added = c.report(v) || added
	}
	// damage that heals and damage that stays: when each lasting violation was last found gone
	for i := range c.Violations {
		v := &c.Violations[i]
		switch {
		case !v.Lasting:
		case present[violationKey(v.Violation)]:
			v.HealedAt = time.Time{}
		case v.HealedAt.IsZero():
			v.HealedAt = now
		}
	}
	if added {
		SortViolations(c.Violations)
	}
}

// report records a violation the first time its key is seen (one report per object and kind), in
// the history and in Violations with its trail; it says whether it was new.
func (c *Cluster) report(v invariant.Violation) bool {
	key := violationKey(v)
	if c.seen[key] {
		return false
	}
	c.seen[key] = true
	c.Rec.Emit(history.Event{Actor: "checker", Kind: history.Violation, Object: v.Object, To: v.Invariant, Detail: v.Message})
	c.Violations = append(c.Violations, Violation{Violation: v, Trail: c.trail(v), Lasting: invariant.Lasting(v.Invariant)})
	return true
}

// Quiesce runs until nothing but periodic work is left for d, then checks once more.
func (c *Cluster) Quiesce(d time.Duration) error {
	if err := c.w.runFor(d); err != nil {
		return err
	}
	c.checkNow()
	return nil
}

// settle is a scenario's settle: the world runs after the last step (d in the simulator, see
// libvirtWorld.settle), then the checker looks once more.
func (c *Cluster) settle(d time.Duration) error {
	if err := c.w.settle(d); err != nil {
		return err
	}
	c.checkNow()
	return nil
}

// GhostBound is how long power sync may take to notice that a VM whose record says Running has no
// domain: the next report (one ping interval), the graceful period (two) and two more reports for a
// pending work job that postpones it.
func GhostBound(cfg *impl.Config) time.Duration { return 5 * cfg.PingInterval() }

// ReportGrace is how long a host that came back Up takes before its reports count: two ping
// intervals and some slack.
func ReportGrace(cfg *impl.Config) time.Duration {
	return 2*cfg.Seconds("ping.interval") + 10*time.Second
}

// LinearBounds are the VM model's staleness bounds for a run with cfg: the ghost-record invariant's.
func LinearBounds(cfg *impl.Config) linear.Bounds {
	return linear.Bounds{Ghost: GhostBound(cfg), ReportGrace: ReportGrace(cfg)}
}

// Snapshot is what the records say and what the hosts run, now.
func (c *Cluster) Snapshot() invariant.Snapshot {
	now := c.Now()
	s := invariant.Snapshot{Time: now, ReportGrace: ReportGrace(c.Config), GhostBound: c.ghostBound(now)}
	c.Rec.FillSnapshot(&s)
	for _, v := range c.DB.VMs(nil) {
		nets := make([]string, len(v.NetworkIDs))
		for i, n := range v.NetworkIDs {
			nets[i] = id(n)
		}
		grace, released := c.haView(v)
		s.VMs = append(s.VMs, invariant.VM{ID: id(v.ID), Name: v.Name, Type: v.Type, State: v.State, HostID: v.HostID, LastHostID: v.LastHostID, Removed: v.Removed, NetworkIDs: nets,
			HAGrace: grace, HAReleased: released,
			Power: v.PowerState, PowerHost: v.PowerHost, PowerCount: v.PowerStateUpdateCount, PowerUpdated: v.PowerStateUpdateTime})
	}
	for _, vol := range c.DB.Volumes(0) {
		s.Volumes = append(s.Volumes, invariant.Volume{ID: id(vol.ID), VMID: id(vol.VMID), Path: vol.Path, State: vol.State, Removed: vol.Removed})
	}
	for _, h := range c.DB.Hosts() {
		s.Hosts = append(s.Hosts, invariant.Host{ID: h.ID, Name: h.ID, Status: h.Status, UpSince: c.Rec.HostUpSince(h.ID)})
	}
	for _, n := range c.DB.Networks(nil) {
		s.Networks = append(s.Networks, invNetwork(n))
		for _, ip := range c.DB.IPPool(n.ID) {
			s.IPs = append(s.IPs, invariant.IP{Address: ip.Address, NetworkID: id(n.ID), Free: ip.VMID == 0, VMID: idOrEmpty(ip.VMID)})
		}
	}
	s.Domains = c.Rec.asserted.Filter(nil, c.w.domains())
	for _, l := range c.DB.Locks() {
		s.Locks = append(s.Locks, invariant.Lock{Key: l.Key, Owner: l.Thread})
	}
	return s
}

// id and idOrEmpty write row ids as the invariants read them.
var id, idOrEmpty = invariant.RowID, invariant.RefID

// ---- names

// VMID resolves a scenario's VM name.
func (c *Cluster) VMID(name string) (int64, error) {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	if id, ok := c.vmIDs[name]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("no VM named %q", name)
}

// NetworkID resolves a scenario's network name.
func (c *Cluster) NetworkID(name string) (int64, error) {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	if id, ok := c.netIDs[name]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("no network named %q", name)
}

// setName records a scenario's name for an id in names (vmIDs or netIDs).
func (c *Cluster) setName(names map[string]int64, name string, id int64) {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	names[name] = id
}

// NetworkNames lists the scenario's networks.
func (c *Cluster) NetworkNames() []string {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	var n []string
	for k := range c.netIDs {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// ---- client operations (run them from a task)

var errServerDown = fmt.Errorf("connect: connection refused (management server is down)")

// CreateNetwork creates a network named name.
func (c *Cluster) CreateNetwork(client, name string, persistent bool) error {
	op := c.Rec.BeginOp(client, "createNetwork", "", "", nil, name)
	if c.apiDown() {
		c.Rec.EndOp(op, errServerDown)
		return errServerDown
	}
	if _, err := c.NetworkID(name); err == nil {
		err := fmt.Errorf("network %q exists", name)
		c.Rec.EndOp(op, err)
		return err
	}
	nid, err := c.clientFor(client).CreateNetwork(name, persistent)
	if err != nil {
		c.Rec.EndOp(op, err)
		return err
	}
	c.setName(c.netIDs, name, nid)
	c.Rec.EndOp(op, nil)
	return nil
}

// DeleteNetwork is deleteNetwork of the network named name, its job waited for. Its call names the
// network (the linearizability checker's network model reads it); the network keeps its name, so a
// later step naming it reaches the removed row and fails as CloudStack's API does.
func (c *Cluster) DeleteNetwork(client, name string) error {
	nid, err := c.NetworkID(name)
	if err != nil {
		return err
	}
	op := c.Rec.BeginOp(client, "deleteNetwork", "", "", []string{id(nid)}, name)
	if c.apiDown() {
		c.Rec.EndOp(op, errServerDown)
		return errServerDown
	}
	wait, err := c.clientFor(client).DeleteNetwork(nid)
	if err == nil {
		err = wait()
	}
	if err == nil {
		c.namesMu.Lock()
		if c.deletedNets == nil {
			c.deletedNets = map[int64]bool{}
		}
		c.deletedNets[nid] = true
		c.namesMu.Unlock()
	}
	c.Rec.EndOp(op, err)
	return err
}

// refuseDeleted is the API's check of a deploy's networkids (no removed network), which the direct
// calls into the server do not pass through (the API face makes it itself). It reads no record: a
// read is a scheduling point, and every deploy would move.
func (c *Cluster) refuseDeleted(nids []int64) error {
	if c.api != nil {
		return nil
	}
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	for _, n := range nids {
		if c.deletedNets[n] {
			return fmt.Errorf("Unable to execute API command deployvirtualmachine due to invalid value. Invalid parameter networkids value=%d due to incorrect long value format, or entity does not exist", n)
		}
	}
	return nil
}

// Deploy is deployVirtualMachine of a VM named name into networks, on host (or any).
func (c *Cluster) Deploy(client, name string, networks []string, hostID string) error {
	return c.DeployHA(client, name, networks, hostID, false)
}

// DeployHA is Deploy of an HA-enabled VM (ha) or not.
func (c *Cluster) DeployHA(client, name string, networks []string, hostID string, ha bool) error {
	nids, ns, err := c.resolveNetworks(networks)
	if err != nil {
		return err
	}
	op := c.Rec.BeginOp(client, "deploy", "", hostID, ns, name)
	if c.apiDown() {
		c.Rec.EndOp(op, errServerDown)
		return errServerDown
	}
	if err := c.refuseDeleted(nids); err != nil {
		c.Rec.EndOp(op, err)
		return err
	}
	vmID, wait, err := c.clientFor(client).Deploy(name, nids, hostID, true)
	if err != nil {
		c.Rec.EndOp(op, err)
		return err
	}
	c.setName(c.vmIDs, name, vmID)
	if ha {
		c.DB.SetHAEnabled(vmID, true) // the offering's offer_ha, before the start job runs
	}
	c.Rec.SetOpVM(op, id(vmID), hostID)
	err = wait()
	c.fillHost(op, vmID)
	c.Rec.EndOp(op, err)
	return err
}

// resolveNetworks turns a scenario's network names into ids (and their history names).
func (c *Cluster) resolveNetworks(names []string) ([]int64, []string, error) {
	var nids []int64
	var ns []string
	for _, n := range names {
		nid, err := c.NetworkID(n)
		if err != nil {
			return nil, nil, err
		}
		nids = append(nids, nid)
		ns = append(ns, id(nid))
	}
	return nids, ns, nil
}

// Allocate is deployVirtualMachine with startvm=false: the VM exists, Stopped, nothing implemented.
func (c *Cluster) Allocate(client, name string, networks []string) error {
	nids, ns, err := c.resolveNetworks(networks)
	if err != nil {
		return err
	}
	op := c.Rec.BeginOp(client, "allocate", "", "", ns, name)
	if c.apiDown() {
		c.Rec.EndOp(op, errServerDown)
		return errServerDown
	}
	if err := c.refuseDeleted(nids); err != nil {
		c.Rec.EndOp(op, err)
		return err
	}
	vmID, wait, err := c.clientFor(client).Deploy(name, nids, "", false)
	if err == nil {
		c.setName(c.vmIDs, name, vmID)
		c.Rec.SetOpVM(op, id(vmID), "")
		err = wait()
	}
	c.Rec.EndOp(op, err)
	return err
}

func (c *Cluster) fillHost(op int, vmID int64) {
	if c.Rec.opHost(op) != "" {
		return // no read of the row: in the simulator a read is a scheduling point
	}
	if v := c.DB.VM(vmID); v != nil {
		h := v.HostID
		if h == "" {
			h = v.LastHostID
		}
		c.Rec.SetOpVM(op, "", h)
	}
}

// VMOp runs one of the VM operations by kind: start, startNoRetry, stop, forceStop, destroy,
// destroyExpunge, expunge, migrate (hostID: the destination), recover.
func (c *Cluster) VMOp(client, kind, name, hostID string) error {
	vmID, err := c.VMID(name)
	if err != nil {
		return err
	}
	var ns []string
	dom := ""
	if v := c.DB.VM(vmID); v != nil {
		for _, n := range v.NetworkIDs {
			ns = append(ns, id(n))
		}
		dom = v.Name
	}
	switch kind {
	case "forceStop":
		c.forceStopBegins(id(vmID), dom)
		defer c.forceStopEnds(name, dom)
	case "migrate":
		if c.migrateBegins(dom) {
			defer c.migrateEnds(name, dom)
		}
	}
	op := c.Rec.BeginOp(client, kind, id(vmID), hostID, ns, name)
	if c.apiDown() {
		c.Rec.EndOp(op, errServerDown)
		return errServerDown
	}
	wait, err := c.clientFor(client).VMOp(kind, vmID, hostID)
	if err != nil {
		c.Rec.EndOp(op, err)
		return err
	}
	err = wait()
	c.fillHost(op, vmID)
	c.Rec.EndOp(op, err)
	return err
}

// SetConfig is updateConfiguration.

// ---- faults.World

var _ faults.World = (*Cluster)(nil)

func (c *Cluster) host(h string) (string, error) {
	if !slices.Contains(c.HostIDs, h) {
		return "", fmt.Errorf("no host %q", h)
	}
	return h, nil
}

func (c *Cluster) AgentStop(h string, graceful bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	a := c.agent(h)
	if a.Dead() {
		return nil // already down (overlapping faults): systemctl stop of a stopped service
	}
	if graceful {
		a.Shutdown()
	} else {
		c.w.killAgent(h, a)
	}
	// A graceful stop takes a second (ShutdownCommand, then the socket): an overlapping fault may
	// have started the host's next agent meanwhile, whose tasks and hypervisor subscription are not
	// this stop's to end (they were: the new agent went silent, its host to Alert; explore --profile
	// fixed --scheduler random --seed 3).
	if c.agent(h) == a {
		c.w.agentStopped(h)
	}
	return nil
}

func (c *Cluster) AgentStart(h string) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	if !c.agent(h).Dead() {
		return nil // already up (overlapping faults): systemctl start of a running service
	}
	if c.poweredOff(h) {
		return fmt.Errorf("host %s is powered off", h)
	}
	if c.removed(h) {
		return nil // an operator removed the host and stopped its agent: it stays stopped
	}
	c.startAgent(h)
	return nil
}

// removed says whether an operator removed host h (host-remove): its agent is not started again
// when a fault on the host heals (a decommissioned host; its agent connecting again would register
// a new host, which the reference does not model).
func (c *Cluster) removed(h string) bool {
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return c.removedHosts[h]
}

func (c *Cluster) CutLink(h string, on bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	c.w.cutLink(h, on)
	return nil
}

func (c *Cluster) domainOf(vmName string) (string, string, error) {
	vmID, err := c.VMID(vmName)
	if err != nil {
		return "", "", err
	}
	v := c.DB.VM(vmID)
	for _, h := range c.HostIDs {
		for _, n := range c.w.running(h) {
			if n == v.Name {
				return h, n, nil
			}
		}
	}
	return "", "", fmt.Errorf("VM %s (%s) has no running domain", vmName, v.Name)
}

func (c *Cluster) CrashDomain(vmName, detail string) error {
	h, dom, err := c.domainOf(vmName)
	if err != nil {
		return err
	}
	return c.w.crash(h, dom, detail)
}

func (c *Cluster) GuestShutdown(vmName string) error {
	h, dom, err := c.domainOf(vmName)
	if err != nil {
		return err
	}
	return c.w.guestShutdown(h, dom)
}

func (c *Cluster) DelayNextOutOfBand(h string, d time.Duration) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	c.w.delayNextOutOfBand(h, d)
	return nil
}

func (c *Cluster) SetRouterBoot(d time.Duration) error { c.routerBoot = d; return nil }

func (c *Cluster) ServerStop() error {
	c.procMu.Lock()
	if c.msDown {
		c.procMu.Unlock()
		return fmt.Errorf("management server is already down")
	}
	c.msDown = true
	c.msDowns = append(c.msDowns, span{from: c.Now()})
	srv := c.server
	c.procMu.Unlock()
	c.w.stopServer()
	if c.servers > 1 {
		srv.PeerLinksClosed()
	}
	return nil
}

func (c *Cluster) ServerStart() error {
	if !c.serverDown() {
		return fmt.Errorf("management server is already up")
	}
	c.startServer()
	c.procMu.Lock()
	c.msDowns[len(c.msDowns)-1].to = c.Now()
	c.procMu.Unlock()
	return nil
}

func (c *Cluster) Backdate(network string, d time.Duration) error {
	nid, err := c.NetworkID(network)
	if err != nil {
		return err
	}
	n := c.DB.Network(nid)
	return c.DB.SetNetworkCreated(nid, n.Created.Add(-d))
}

func (c *Cluster) Begin(kind string, disruptive bool, detail string, targets ...string) int {
	targets = c.withDomainsOf(kind, targets)
	resolved := make([]string, 0, len(targets))
	for _, t := range targets {
		resolved = append(resolved, c.resolveTarget(t))
	}
	return c.Rec.BeginFault(kind, disruptive, detail, resolved...)
}

// End closes a fault once its effect is over: a host fault (and a management-server restart) lasts
// until the hosts are Up again, for that long it explains a failed start.
func (c *Cluster) End(i int, detail string) {
	f := c.Rec.Fault(i)
	if f.Disruptive && slices.ContainsFunc(f.Targets, func(t string) bool { return t == "ms" || strings.HasPrefix(t, "host:") }) {
		deadline := c.Now().Add(5 * time.Minute)
		for !c.allUp() && c.Now().Before(deadline) {
			c.Sleep(time.Second)
		}
	}
	c.Rec.EndFault(i, detail)
}

// resolveTarget turns "vm:<name>" and "network:<name>" into ids.
func (c *Cluster) resolveTarget(t string) string {
	if name, ok := strings.CutPrefix(t, "vm:"); ok {
		if id, err := c.VMID(name); err == nil {
			return VMObj(id)
		}
	}
	if name, ok := strings.CutPrefix(t, "network:"); ok {
		if id, err := c.NetworkID(name); err == nil {
			return impl.NetworkObject(id)
		}
	}
	return t
}

// VMObj names a VM object.
func VMObj(id int64) string { return impl.VMObject(id) }

func (c *Cluster) vmState(name string) (vm.State, bool) { return c.VMState(name) }

// VMState reads a VM's record (for reports).
func (c *Cluster) VMState(name string) (vm.State, bool) {
	id, err := c.VMID(name)
	if err != nil {
		return "", false
	}
	v := c.DB.VM(id)
	if v == nil {
		return "", false
	}
	if v.Removed {
		return "Expunged", true
	}
	return v.State, true
}
