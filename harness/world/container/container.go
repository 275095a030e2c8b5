package container

// The container world: the management server and every host run in Docker containers
// (drivers/container), so the harness reaches the server only through its control endpoint (JSON
// over HTTP) and the domains' truth only through each host's hypervisor: libvirtd (real domains,
// which the agent containers drive through libvirtd's mounted socket) where libvirt is usable, else
// a hypervisor container per host (simulated domains). A scenario's client
// operations become control calls, its faults act on containers, and the invariants are checked on
// snapshots polled during the run (the control endpoint's records + every hypervisor's domains).
//
// Limits of this world, stated in every report's notes:
//   - domains are real libvirt domains or simulated ones (which, and why, is the first note); either
//     way they live outside the agent container, so its restart, kill or pause leaves them running.
//     A crash of a real domain is a kill -9 of its QEMU (STOPPED/FAILED, whatever detail is asked);
//   - the network-lock invariant needs the server's network writes with their lock holders, which the
//     control endpoint does not export: it is not checked here;
//   - ms-restart kills the server's container and starts it again: its database is a state file in
//     the container (csconform server --state), so the new incarnation finds every committed record,
//     as CloudStack finds MySQL's; backdate and aged networks go through the control endpoint
//     (backdateNetwork, the operators' UPDATE networks SET created = …); guest-shutdown and
//     slow-router-boot go to the hosts' hypervisor containers (a router boots in 1 s by default);
//   - primed networks are not available: priming waits for the network GC to shut the network down
//     (network.gc.interval + network.gc.wait, 20 min with CloudStack's values), too long in real time.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/detect"
	ctr "github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Def is the container world, as harness.Run opens it: --driver container.
var Def = harness.WorldDef{Name: "container", Doc: "server and hosts in Docker containers built FROM scratch; Ctrl-C heals the faults and removes what the run made",
	Caps: Capabilities, Open: open}

// Capabilities: the server and the hosts in containers on one machine.
var Capabilities = harness.Capabilities{World: "in containers", Lacks: map[harness.Capability]string{
	harness.VirtualTime:                          harness.WhyRealTime,
	harness.FaultCap("host-power-off"):           "a host container stopped with its agent still leaves the domains in libvirtd (or the hypervisor container), so it is an agent kill, not a power loss",
	harness.FaultCap("host-remove"):              "the control endpoint has no deleteHost",
	harness.FaultCap("heartbeat-fail"):           "there is no shared NFS primary storage whose heartbeat file the hosts write",
	harness.FaultCap("peer-stop"):                harness.WhyPeersSimOnly,
	harness.FaultCap("start-fails"):              "the host containers' hypervisor has no control to fail a domain's start on demand",
	harness.PeerServers:                          harness.WhyPeersSimOnly,
	harness.ServerLog:                            harness.WhyNoServerLog,
	harness.PrimedNetworks:                       "priming waits for the network GC to shut the network down, 20 min of real time with CloudStack's values",
	harness.AllocateOp:                           "the control endpoint deploys and starts at once",
	harness.HAVMs:                                "the control endpoint's deploy has no HA flag (the service offering's offer_ha)",
	harness.MigrateOp:                            harness.WhyNoMigration,
	harness.RecoverOp:                            "the control endpoint has no recoverVirtualMachine",
	harness.DeleteNetworkOp:                      "the control endpoint has no deleteNetwork",
	harness.DetectorCap(invariant.StorageLeak):   "neither the control endpoint nor the hosts' hypervisors list primary storage's files",
	harness.DetectorCap(invariant.HaPromise):     "it deploys no HA-enabled VM (the control endpoint's deploy has no HA flag), and the server's history, read out of its container at the end, is judged by the transition guards only",
	harness.DetectorCap(harness.Linearizability): "the server's events stay in its container: the harness's history has the client operations, not the writes the models need",
}}.WithLacks(harness.RealTimeLacks).WithLacks(harness.OutsideLacks)

// Scaling is the time scaling of a run in containers, in one place. A scenario's own config
// for a key wins.
//
//   - ping.interval (60 s) → 5 s: the power-report graceful period (2 × ping.interval) and the
//     report grace of the orphan-domain check (2 × ping.interval + 10 s) become 10 s and 20 s, and a
//     paused or partitioned agent is noticed after 12.5 s (ping.timeout 2.5 × ping.interval).
//   - commands.timeout: the investigation's CheckHealthCommand (50 s) → 5 s and CheckOnHostCommand
//     (20 s) → 2 s, so a partitioned host is judged within the same scale.
//   - settle: at most MaxSettle after the last step (the simulator's default is 3 min), which is
//     past the report grace.
//   - with real libvirt domains, a router says ready 1 s after reaching userspace (the container
//     driver's Options.RouterBoot; CloudStack's 36 s is the libvirt world's, where D1 races it); a
//     guest's own boot (~6 s under TCG, more when several boot at once) is real.
//
// A scenario then takes about a minute of wall time, plus about 10 s to start the containers (and
// the first time, a static build of csconform).
var Scaling = map[string]string{"ping.interval": "5", "commands.timeout": "CheckHealthCommand=5,CheckOnHostCommand=2"}

// MaxSettle caps a scenario's settle time in containers.
const MaxSettle = 40 * time.Second

const checkEvery = 300 * time.Millisecond

// options say where and how a run in containers happens.
type options struct {
	Run string          // labels everything of the run (default: NewRunID())
	Ctx context.Context // cancelled (Ctrl-C): the run stops, heals its faults and removes its containers
	Log io.Writer       // progress lines (nil: none)
	// Domains: ctr.DomainsAuto ("": real libvirt domains where libvirt is usable, else
	// simulated), ctr.DomainsLibvirt or ctr.DomainsSimulated.
	Domains string
}

// open starts the server and the scenario's hosts in containers and waits for the hosts to
// come up; Close removes everything the run created, whatever the outcome.
func open(sc *harness.Scenario, defects impl.Switches, ro harness.RunOptions) (harness.World, error) {
	co := options{Run: ro.RunID, Ctx: ro.Ctx, Log: ro.Log, Domains: ro.Domains}
	if co.Ctx == nil {
		co.Ctx = context.Background()
	}
	if co.Run == "" {
		co.Run = harness.NewRunID()
	}
	conf := map[string]string{}
	for k, v := range Scaling {
		conf[k] = v
	}
	for k, v := range sc.Config {
		conf[k] = v
	}
	cfg, err := impl.NewConfig(conf)
	if err != nil {
		return nil, err
	}
	o := ctr.Options{Run: co.Run, Hosts: sc.Hosts, Config: conf, Log: co.Log, Verbose: true, Domains: co.Domains}
	if harness.ProfileMatches(ro.Profile, defects) {
		o.Profile = ro.Profile
	} else {
		o.Defects = strings.Join(defects.On(), ",")
		if o.Defects == "" {
			o.Defects = "none"
		}
	}
	cl, err := ctr.Start(co.Ctx, o)
	if err != nil {
		return nil, err
	}
	w := &containerWorld{cl: cl, ctx: co.Ctx, log: co.Log, vmIDs: map[string]int64{}, netIDs: map[string]int64{},
		hostState: map[string]string{},
		grace:     harness.ReportGrace(cfg), cfg: cfg, guardCfgs: []detect.GuardConfigAt{{Cfg: harness.GuardConfig(cfg)}}}
	w.rec = harness.NewRecorder(time.Now)
	w.start = time.Now()
	r := &containerRun{w: w, sc: sc, run: co.Run, RealTime: harness.NewRealTime(co.Ctx)}
	r.Background(w.pollHosts, w.checkLoop)
	if err := w.waitAllUp(2 * time.Minute); err != nil {
		r.StopBackground()
		cl.Close()
		return nil, err
	}
	return r, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type containerWorld struct {
	cl    *ctr.Cluster
	ctx   context.Context
	log   io.Writer
	rec   *harness.Recorder
	start time.Time
	grace time.Duration

	readMu    sync.Mutex // one readHosts at a time
	mu        sync.Mutex
	vmIDs     map[string]int64
	netIDs    map[string]int64
	hostState map[string]string
	timeline  []string
	last      *ctlSnapshot
	checks    harness.OutsideChecks
	viols     []harness.Violation
	checkMu   sync.Mutex
	// guardCfgs: the configuration the server ran under, from when (a setConfig step changes it)
	guardCfgs []detect.GuardConfigAt
	cfg       *impl.Config
	guarded   map[string]int // transitions each guard judged in the server's history
}

func (w *containerWorld) logf(format string, args ...any) {
	if w.log != nil {
		fmt.Fprintf(w.log, "csconform container: "+format+"\n", args...)
	}
}

func (w *containerWorld) note(format string, args ...any) {
	line := fmt.Sprintf("%s "+format, append([]any{harness.Clock(time.Now(), w.start)}, args...)...)
	w.mu.Lock()
	w.timeline = append(w.timeline, line)
	w.mu.Unlock()
	w.logf("%s", line)
}

// ---- what the server says

// ctlSnapshot is the control endpoint's snapshot.
type ctlSnapshot struct {
	Hosts    []impl.HostVO
	VMs      []impl.VMVO `json:"vms"`
	Networks []impl.NetworkVO
	IPs      map[string][]impl.IPHolder `json:"ips"`
	Volumes  []impl.VolumeVO
}

// pollHosts records the hosts' states as the server sees them (listHosts), as history events and as
// the report's timeline.
func (w *containerWorld) pollHosts(ctx context.Context) {
	down := false
	for harness.SleepCtx(ctx, 200*time.Millisecond) {
		if err := w.readHosts(ctx); err != nil {
			if !down && ctx.Err() == nil {
				w.note("server: control endpoint unreachable (%v)", err)
			}
			down = true
			continue
		}
		if down {
			w.note("server: control endpoint answers again")
			down = false
		}
	}
}

// readHosts reads listHosts once and records what changed (one reader at a time, so changes are
// recorded in the order the server answered).
func (w *containerWorld) readHosts(ctx context.Context) error {
	w.readMu.Lock()
	defer w.readMu.Unlock()
	var hs []impl.HostVO
	if err := w.cl.Control(ctx, "listHosts", nil, &hs); err != nil {
		return err
	}
	for _, h := range hs {
		w.mu.Lock()
		old := w.hostState[h.ID]
		w.hostState[h.ID] = string(h.Status)
		w.mu.Unlock()
		if old != string(h.Status) {
			w.rec.Emit(history.Event{Actor: "server", Kind: history.State, Object: "host:" + h.ID, From: old, To: string(h.Status), Detail: "listHosts"})
			w.note("server: host %s %s -> %s", h.ID, cmp.Or(old, "∅"), h.Status)
		}
	}
	return nil
}

func (w *containerWorld) hostUp(h string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hostState[h] == string(host.Up)
}

func (w *containerWorld) allUp() bool {
	for _, h := range w.cl.HostIDs() {
		if !w.hostUp(h) {
			return false
		}
	}
	return true
}

func (w *containerWorld) waitAllUp(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !w.allUp() {
		if time.Now().After(deadline) {
			return fmt.Errorf("hosts did not come up within %s", limit)
		}
		if !harness.SleepCtx(w.ctx, 100*time.Millisecond) {
			return w.ctx.Err()
		}
	}
	return nil
}

// ---- checking

func (w *containerWorld) checkLoop(ctx context.Context) {
	for harness.SleepCtx(ctx, checkEvery) {
		w.check()
	}
}

// check reads the records, then every hypervisor's domains, and runs the invariants. The two reads
// are not atomic, so a violation of the domains' truth counts once two checks in a row see it.
func (w *containerWorld) check() {
	w.checkMu.Lock()
	defer w.checkMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cs ctlSnapshot
	if err := w.cl.Control(ctx, "snapshot", nil, &cs); err != nil {
		return // server unreachable: nothing to compare
	}
	s := invariant.Snapshot{Time: time.Now(), ReportGrace: w.grace}
	w.rec.FillSnapshot(&s)
	s.NetworkChanges = nil // not exported by the control endpoint
	for _, v := range cs.VMs {
		s.VMs = append(s.VMs, invariant.VM{ID: id(v.ID), Name: v.Name, Type: v.Type, State: v.State, HostID: v.HostID, LastHostID: v.LastHostID, Removed: v.Removed})
	}
	for _, vol := range cs.Volumes {
		s.Volumes = append(s.Volumes, invariant.Volume{ID: id(vol.ID), VMID: id(vol.VMID), Path: vol.Path, State: vol.State, Removed: vol.Removed})
	}
	for _, h := range cs.Hosts {
		s.Hosts = append(s.Hosts, invariant.Host{ID: h.ID, Name: h.ID, Status: h.Status, UpSince: w.rec.HostUpSince(h.ID)})
	}
	for _, n := range cs.Networks {
		s.Networks = append(s.Networks, invariant.Network{ID: id(n.ID), Name: n.Name, State: n.State})
		for _, ip := range cs.IPs[id(n.ID)] {
			s.IPs = append(s.IPs, invariant.IP{Address: ip.Address, NetworkID: id(n.ID), Free: ip.VMID == 0, VMID: idOrEmpty(ip.VMID)})
		}
	}
	for _, h := range w.cl.HostIDs() {
		ds, err := w.cl.Domains(ctx, h)
		if err != nil {
			return // a host's truth is missing: no check this time
		}
		for _, d := range ds {
			s.Domains = append(s.Domains, invariant.Domain{HostID: h, Name: d.Name, Running: true, IPs: d.IPs, Disks: d.Disks})
		}
	}
	w.mu.Lock()
	w.last = &cs
	w.mu.Unlock()
	w.rec.Observe(s)
	for _, v := range w.checks.Add(w.rec, s, func(obj string) []string {
		var objs []string
		if name, ok := strings.CutPrefix(obj, "domain:"); ok {
			for _, r := range cs.VMs {
				if r.Name == name {
					objs = append(objs, harness.VMObj(r.ID))
				}
			}
		}
		return objs
	}) {
		w.mu.Lock()
		w.viols = append(w.viols, v)
		w.mu.Unlock()
		w.note("checker: %s %s", v.Invariant, v.Message)
	}
}

// vmState is a scenario VM's record in the last snapshot (Expunged once removed).
func (w *containerWorld) vmState(name string) (vm.State, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	vid, ok := w.vmIDs[name]
	if !ok || w.last == nil {
		return "", false
	}
	for _, v := range w.last.VMs {
		if v.ID == vid {
			if v.Removed {
				return "Expunged", true
			}
			return v.State, true
		}
	}
	return "", false
}

func (w *containerWorld) vmRecord(vid int64) *impl.VMVO {
	var vs []impl.VMVO
	if err := w.cl.Control(w.ctx, "listVirtualMachines", nil, &vs); err != nil {
		return nil
	}
	for i := range vs {
		if vs[i].ID == vid {
			return &vs[i]
		}
	}
	return nil
}

// ---- client operations through the control endpoint

func (w *containerWorld) vmID(name string) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.vmIDs[name]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("no VM named %q", name)
}

// serverGone is how long a client keeps polling a job while the server does not answer (an
// ms-restart): the job is in the database, and the next incarnation finishes or cleans it up.
const serverGone = 2 * time.Minute

// waitJob waits for an async job and turns its outcome into an error.
func (w *containerWorld) waitJob(jobID int64) error {
	var unreachable time.Time
	for {
		var jr struct {
			Job       impl.JobVO
			Done      bool
			Succeeded bool
		}
		if err := w.cl.Control(w.ctx, "queryAsyncJobResult", url.Values{"jobid": {id(jobID)}, "wait": {"60s"}}, &jr); err != nil {
			var api *control.APIError
			if errors.As(err, &api) || w.ctx.Err() != nil {
				return err
			}
			if unreachable.IsZero() {
				unreachable = time.Now()
			}
			if time.Since(unreachable) > serverGone {
				return err
			}
			harness.SleepCtx(w.ctx, 500*time.Millisecond)
			continue
		}
		unreachable = time.Time{}
		if jr.Done {
			if jr.Succeeded {
				return nil
			}
			return errors.New(cmp.Or(jr.Job.Result, "job failed"))
		}
		if w.ctx.Err() != nil {
			return w.ctx.Err()
		}
	}
}

func (w *containerWorld) createNetwork(client, name string) error {
	op := w.rec.BeginOp(client, "createNetwork", "", "", nil, name)
	var n impl.NetworkVO
	err := w.cl.Control(w.ctx, "createNetwork", url.Values{"name": {name}}, &n)
	if err == nil {
		w.mu.Lock()
		w.netIDs[name] = n.ID
		w.mu.Unlock()
	}
	w.rec.EndOp(op, err)
	return err
}

func (w *containerWorld) deploy(client, name string, networks []string, hostID string) error {
	var nids, ns []string
	w.mu.Lock()
	for _, n := range networks {
		nids = append(nids, id(w.netIDs[n]))
		ns = append(ns, id(w.netIDs[n]))
	}
	w.mu.Unlock()
	op := w.rec.BeginOp(client, "deploy", "", hostID, ns, name)
	var out struct {
		VM    impl.VMVO
		JobID int64
	}
	err := w.cl.Control(w.ctx, "deployVirtualMachine", url.Values{"networkids": {strings.Join(nids, ",")}, "hostid": {hostID}}, &out)
	if err == nil {
		w.mu.Lock()
		w.vmIDs[name] = out.VM.ID
		w.mu.Unlock()
		w.rec.SetOpVM(op, id(out.VM.ID), hostID)
		err = w.waitJob(out.JobID)
	}
	w.rec.EndOp(op, err)
	return err
}

func (w *containerWorld) vmOp(client, kind, name, hostID string) error {
	vid, err := w.vmID(name)
	if err != nil {
		return err
	}
	op := w.rec.BeginOp(client, kind, id(vid), hostID, nil, name)
	var cmd string
	q := url.Values{"id": {id(vid)}}
	switch kind {
	case "start", "startNoRetry":
		cmd = "startVirtualMachine"
		if hostID != "" {
			q.Set("hostid", hostID)
		}
	case "stop":
		cmd = "stopVirtualMachine"
	case "forceStop":
		cmd, q["forced"] = "stopVirtualMachine", []string{"true"}
	case "destroy":
		cmd = "destroyVirtualMachine"
	case "destroyExpunge":
		cmd, q["expunge"] = "destroyVirtualMachine", []string{"true"}
	case "expunge":
		cmd = "expungeVirtualMachine"
	default:
		err := fmt.Errorf("operation %q is not available in containers", kind)
		w.rec.EndOp(op, err)
		return err
	}
	var out struct{ JobID int64 }
	err = w.cl.Control(w.ctx, cmd, q, &out)
	if err == nil {
		err = w.waitJob(out.JobID)
	}
	w.rec.EndOp(op, err)
	return err
}

// ---- steps

// containerRun is the container world's World: operations and conditions through the server's
// control endpoint, in real time.
type containerRun struct {
	w   *containerWorld
	sc  *harness.Scenario
	run string
	*harness.RealTime
}

var _ harness.World = (*containerRun)(nil)

func (s *containerRun) Begin(res *harness.Result) {
	res.Started, res.Rec, res.Outside = s.w.start, s.w.rec, true
}

func (s *containerRun) Setup() error {
	for _, n := range s.sc.Networks {
		if err := s.w.createNetwork("setup", n.Name); err != nil {
			return err
		}
		if n.Age > 0 { // an old network: created n.Age ago, as the simulator's setup makes it
			if err := s.w.backdate(n.Name, n.Age); err != nil {
				return fmt.Errorf("aging network %s: %v", n.Name, err)
			}
		}
	}
	return nil
}

// Settle waits the scenario's settle, MaxSettle at most.
func (s *containerRun) Settle() error {
	settle := s.sc.Settle
	if settle <= 0 || settle > MaxSettle {
		settle = MaxSettle
	}
	return s.Pause(settle)
}

// Judge takes a last look, twice: a violation of the domains' truth counts once two looks see it.
func (s *containerRun) Judge() error {
	s.StopBackground()
	s.w.check()
	s.w.check()
	s.w.judgeGuards()
	return nil
}

// withRestarts merges the management server's restarts, as the harness recorded the faults, into
// the server's own history by time (numbered anew): a restarted server's threads are gone with the
// locks they held, which its own history does not say.
func withRestarts(server []history.Event, harnessEvents iter.Seq[history.Event]) []history.Event {
	var restarts []history.Event
	for e := range harnessEvents {
		if e.Kind == history.Fault && strings.HasPrefix(e.To, "ms-restart") {
			restarts = append(restarts, e)
		}
	}
	out := make([]history.Event, 0, len(server)+len(restarts))
	i := 0
	for _, e := range server {
		for i < len(restarts) && restarts[i].Time.Before(e.Time) {
			out = append(out, restarts[i])
			i++
		}
		out = append(out, e)
	}
	out = append(out, restarts[i:]...)
	for k := range out {
		out[k].Seq = int64(k + 1)
	}
	return out
}

// judgeGuards reads the server's own history out of its container and judges its transitions
// against the guards (model/guard), as the simulator's runs are judged: the server's writes, with
// their threads, locks and jobs, are in that history, not in what the harness sees from outside.
// A history that cannot be read is a note, not a verdict.
func (w *containerWorld) judgeGuards() {
	b, err := w.cl.ServerHistory(w.ctx)
	if err != nil {
		w.note("transition guards not judged: %v", err)
		return
	}
	evs, err := history.Read(bytes.NewReader(b), "the server's history", history.Limits{})
	if err != nil {
		w.note("transition guards not judged: %v", err)
		return
	}
	w.mu.Lock()
	cfgs := slices.Clone(w.guardCfgs)
	w.mu.Unlock()
	ch := detect.JudgeGuards(slices.Values(withRestarts(evs, w.rec.History().All())), cfgs)
	seen := map[string]bool{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range ch.Violations {
		if seen[v.Event.Object] {
			continue // one report per object, as the simulator's checker gives
		}
		seen[v.Event.Object] = true
		w.viols = append(w.viols, harness.Violation{Violation: detect.GuardViolation(v)})
	}
	w.guarded = ch.Judged
}

func (s *containerRun) Finish(res *harness.Result) {
	w := s.w
	w.finish(res)
	w.truthAtEnd()
	res.VirtualEnd = time.Since(w.start)
	res.Notes = append(append([]string{"world: containers (run " + s.run + "); hosts' domains: " + w.cl.DomainsWhy + "; not checked here: network-lock, linearizability (judged on the harness's own history; the server's history, read from its container at the end, is judged by the transition guards)"}, w.timeline...), res.Notes...)
}

// LinearBounds: the server's events stay in its container.
func (s *containerRun) LinearBounds() (linear.Bounds, bool)  { return linear.Bounds{}, false }
func (s *containerRun) VMState(name string) (vm.State, bool) { return s.w.vmState(name) }

// Close removes the run's containers (and libvirt domains and files); an error says what the server
// logged last, or that the run was interrupted.
func (s *containerRun) Close(res *harness.Result, err error) (*harness.Result, error) {
	s.StopBackground()
	defer s.w.cl.Close()
	if err != nil {
		if s.Ctx().Err() != nil {
			return nil, fmt.Errorf("interrupted (%v); the run's faults were healed and its containers (and libvirt domains and files) removed", s.Ctx().Err())
		}
		return res, fmt.Errorf("%v\nserver log (tail):\n%s", err, tail(s.w.cl.ServerLogs(context.Background()), 40))
	}
	return res, nil
}

func (s *containerRun) Now() time.Time              { return time.Now() }
func (s *containerRun) Wait(d time.Duration) error  { return s.Pause(d) }
func (s *containerRun) Fault(st harness.Step) error { return faults.Run(s.w, st.FaultSpec()) }
func (s *containerRun) UntilPoll() time.Duration    { return 20 * time.Millisecond }

// UntilLimit: real time, so an unmet condition fails in minutes, not the simulator's hour.
func (s *containerRun) UntilLimit() time.Duration { return 5 * time.Minute }

func (s *containerRun) SetConfig(key, value string) error {
	if err := s.w.cl.Control(s.w.ctx, "updateConfiguration", url.Values{"name": {key}, "value": {value}}, nil); err != nil {
		return err
	}
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.cfg.Set(key, value); err != nil {
		return err
	}
	w.guardCfgs = append(w.guardCfgs, detect.GuardConfigAt{From: time.Now(), Cfg: harness.GuardConfig(w.cfg)})
	return nil
}

// The operations' failures are outcomes in the history, never errors of the run.
func (s *containerRun) CreateNetwork(client, name string) error {
	_ = s.w.createNetwork(client, name)
	return nil
}

func (s *containerRun) DeleteNetwork(string, string) error {
	return Capabilities.Refusal(harness.DeleteNetworkOp)
}

func (s *containerRun) Deploy(client string, st harness.Step) error {
	_ = s.w.deploy(client, st.VM, st.Networks, st.Host)
	return nil
}

func (s *containerRun) Allocate(string, harness.Step) error {
	return Capabilities.Refusal(harness.AllocateOp)
}

func (s *containerRun) VMOp(client string, st harness.Step) error {
	_ = s.w.vmOp(client, st.Op, st.VM, st.Host)
	return nil
}

// Records read the control endpoint anew (hosts: the last ping); start-sent is read from the
// server's log (it runs with --verbose).
func (s *containerRun) Records() harness.Records { return records{s.w} }

type records struct{ w *containerWorld }

func (r records) VMState(name string) (vm.State, bool) {
	if vid, err := r.w.vmID(name); err == nil {
		if v := r.w.vmRecord(vid); v != nil {
			return v.State, true
		}
	}
	return "", false
}

func (r records) NetworkState(name string) (network.State, bool) {
	var ns []impl.NetworkVO
	if r.w.cl.Control(r.w.ctx, "listNetworks", nil, &ns) == nil {
		for _, n := range ns {
			if n.Name == name {
				return n.State, true
			}
		}
	}
	return "", false
}

func (r records) HostStatus(name string) (host.Status, bool) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	s, ok := r.w.hostState[name]
	return host.Status(s), ok
}

func (r records) StartSent(name string) bool {
	if vid, err := r.w.vmID(name); err == nil {
		v := r.w.vmRecord(vid)
		return v != nil && strings.Contains(r.w.cl.ServerLogs(r.w.ctx), harness.StartSentLine(v.Name))
	}
	return false
}

func (w *containerWorld) finish(res *harness.Result) {
	harness.FillOutsideTable(res, w.rec, w.vmState)
	w.mu.Lock()
	res.Violations = append([]harness.Violation(nil), w.viols...)
	res.Guarded = w.guarded
	w.mu.Unlock()
	harness.SortViolations(res.Violations)
}

// truthAtEnd notes every running domain with what the records say of it and its addresses, so the
// report says in plain words whether a domain runs with no record and whose IP it holds.
func (w *containerWorld) truthAtEnd() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.mu.Lock()
	last := w.last
	w.mu.Unlock()
	if last == nil {
		return
	}
	for _, h := range w.cl.HostIDs() {
		ds, err := w.cl.Domains(ctx, h)
		if err != nil {
			w.note("end: host %s: domains unreadable: %v", h, err)
			continue
		}
		for _, d := range ds {
			rec := "NO RECORD"
			for _, v := range last.VMs {
				if v.Name == d.Name {
					rec = "record " + string(v.State)
					if v.Removed {
						rec = "record REMOVED (expunged): no record"
					}
				}
			}
			var holders []string
			for _, ip := range d.IPs {
				holder := "free in the pool"
				for _, ips := range last.IPs {
					for _, p := range ips {
						if p.Address == ip && p.VMID != 0 {
							holder = "pool gives it to VM " + id(p.VMID)
						}
					}
				}
				holders = append(holders, ip+" ("+holder+")")
			}
			w.note("end: host %s runs domain %s — %s; IPs %s", h, d.Name, rec, strings.Join(holders, ", "))
		}
	}
}

// ---- faults.World

var _ faults.World = (*containerWorld)(nil)

func (w *containerWorld) Sleep(d time.Duration) { harness.SleepCtx(w.ctx, d) }

func (w *containerWorld) AgentStop(h string, graceful bool) error {
	if graceful {
		return w.cl.StopAgent(w.ctx, h)
	}
	return w.cl.KillAgent(w.ctx, h)
}

func (w *containerWorld) AgentStart(h string) error {
	return w.cl.StartAgent(context.WithoutCancel(w.ctx), h)
}

func (w *containerWorld) CutLink(h string, on bool) error {
	if on {
		return w.cl.Disconnect(w.ctx, h)
	}
	return w.cl.Connect(context.WithoutCancel(w.ctx), h)
}

func (w *containerWorld) CrashDomain(vmName, detail string) error {
	h, dom, err := w.domainOf(vmName)
	if err != nil {
		return err
	}
	return w.cl.CrashDomain(w.ctx, h, dom, detail)
}

// domainOf finds the host running a scenario VM's domain.
func (w *containerWorld) domainOf(vmName string) (string, string, error) {
	vid, err := w.vmID(vmName)
	if err != nil {
		return "", "", err
	}
	r := w.vmRecord(vid)
	if r == nil {
		return "", "", fmt.Errorf("no record of VM %s", vmName)
	}
	for _, h := range w.cl.HostIDs() {
		ds, err := w.cl.Domains(w.ctx, h)
		if err != nil {
			return "", "", err
		}
		for _, d := range ds {
			if d.Name == r.Name {
				return h, d.Name, nil
			}
		}
	}
	return "", "", fmt.Errorf("VM %s (%s) has no running domain", vmName, r.Name)
}

func (w *containerWorld) GuestShutdown(vmName string) error {
	h, dom, err := w.domainOf(vmName)
	if err != nil {
		return err
	}
	return w.cl.GuestShutdown(w.ctx, h, dom)
}

func (w *containerWorld) DelayNextOutOfBand(h string, d time.Duration) error {
	return w.cl.DelayNextOutOfBand(w.ctx, h, d)
}

func (w *containerWorld) SetRouterBoot(d time.Duration) error { return w.cl.SetRouterBoot(w.ctx, d) }

// ServerStop kills the server's container; ServerStart starts it again on the same database (its
// state file), as the simulator's ms-restart does.
func (w *containerWorld) ServerStop() error { return w.cl.StopServer(w.ctx) }
func (w *containerWorld) ServerStart() error {
	if err := w.cl.StartServer(context.WithoutCancel(w.ctx)); err != nil {
		return err
	}
	// The new incarnation marks its hosts Disconnected before it answers; read that now, so End does
	// not take the dead one's last "Up" for the hosts being back.
	return w.readHosts(w.ctx)
}

func (w *containerWorld) Backdate(network string, d time.Duration) error {
	return w.backdate(network, d)
}

func (w *containerWorld) backdate(network string, d time.Duration) error {
	w.mu.Lock()
	nid, ok := w.netIDs[network]
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("no network named %q", network)
	}
	return w.cl.Control(w.ctx, "backdateNetwork", url.Values{"id": {id(nid)}, "by": {d.String()}}, nil)
}

func (w *containerWorld) Begin(kind string, disruptive bool, detail string, targets ...string) int {
	resolved := make([]string, 0, len(targets))
	for _, t := range targets {
		if name, ok := strings.CutPrefix(t, "vm:"); ok {
			if vid, err := w.vmID(name); err == nil {
				t = harness.VMObj(vid)
			}
		}
		if name, ok := strings.CutPrefix(t, "network:"); ok {
			w.mu.Lock()
			if nid, found := w.netIDs[name]; found {
				t = impl.NetworkObject(nid)
			}
			w.mu.Unlock()
		}
		resolved = append(resolved, t)
	}
	w.note("fault %s begins on %s: %s", kind, strings.Join(resolved, ","), detail)
	return w.rec.BeginFault(kind, disruptive, detail, resolved...)
}

// End closes a fault once its effect is over: a host fault (and a management-server restart) lasts
// until the hosts are Up again.
func (w *containerWorld) End(i int, detail string) {
	f := w.rec.Fault(i)
	if f.Disruptive && slices.ContainsFunc(f.Targets, func(t string) bool { return t == "ms" || strings.HasPrefix(t, "host:") }) {
		deadline := time.Now().Add(2 * time.Minute)
		for !w.allUp() && time.Now().Before(deadline) && harness.SleepCtx(w.ctx, 100*time.Millisecond) {
		}
	}
	w.note("fault %s ends: %s", f.Kind, cmp.Or(detail, "done"))
	w.rec.EndFault(i, detail)
}

// The container world: its hosts are containers on one machine. Run refuses these
// faults up front; a caller of faults.Run gets the same refusal.
func (w *containerWorld) HostPower(string, bool) error {
	return Capabilities.Refusal(harness.FaultCap("host-power-off"))
}
func (w *containerWorld) RemoveHost(string) error {
	return Capabilities.Refusal(harness.FaultCap("host-remove"))
}
func (w *containerWorld) PeerStop(string) error {
	return Capabilities.Refusal(harness.FaultCap("peer-stop"))
}
func (w *containerWorld) PeerStart(string) error {
	return Capabilities.Refusal(harness.FaultCap("peer-stop"))
}
func (w *containerWorld) FailStarts(string, bool) error {
	return Capabilities.Refusal(harness.FaultCap("start-fails"))
}
func (w *containerWorld) Heartbeat(string, bool) error {
	return Capabilities.Refusal(harness.FaultCap("heartbeat-fail"))
}

// id and idOrEmpty write row ids as the invariants read them.
var id, idOrEmpty = invariant.RowID, invariant.RefID
