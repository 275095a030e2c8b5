package harness

// The libvirt world: the reference management server and one agent per host run in this process on
// real time and goroutines (drivers/live), speak TCP over loopback with a cutting proxy between each
// agent and the server, and run real QEMU domains on a (shared) libvirtd (drivers/libvirt). The
// invariants read the domains from libvirt, never from an agent.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// LibvirtOptions say where and how a run on real domains happens.
type LibvirtOptions struct {
	URI     string // libvirtd ("" = qemu:///system)
	Run     string // names every domain and file of the run (default: made from the clock)
	BaseDir string // run directories ("" = $CSCONFORM_RUN_DIR or /var/lib/csconform)
	// Ctx ends the run when cancelled (Ctrl-C): Run returns its error, and everything
	// the run made is removed.
	Ctx context.Context
	Log io.Writer // progress lines (nil: none)
	// KeepOnFailure skips the cleanup (for debugging; csconform cleanup removes it later).
	KeepOnFailure bool
	// SerialLogs, if set, is a directory the guests' serial consoles are copied to (as
	// RUN-HOST-DOMAIN.serial.log) before the cleanup removes them: what a guest printed while
	// booting, or why it stopped, outlives the run.
	SerialLogs string
}

// LibvirtScaling is the time scaling of a run on real domains, in one place. CloudStack's defaults
// that would make a real run last hours are scaled down; what the defects depend on is kept real.
//
//   - network.gc.interval and network.gc.wait (600 s each): 10 s while the scenario's setup primes
//     its networks (a primed network is shut down by the network GC, 20 min with the defaults), then
//     back to the scenario's values, so the steps meet the GC as in the simulator.
//   - job.expire.minutes (1440) stays: a network's age is set by backdating its creation time (the
//     scenario's age and backdate steps, as the seed 000 A/B did), not by waiting.
//   - ping.interval (60 s) stays: no seed scenario waits for a ping timeout, and the power-report
//     graceful period (2 × ping.interval) is part of the D2 defect's timing.
//   - router boot: real, 36–41 s (the guest's csc.delay), as in the report; D1 is a race against it.
//     Only while priming (setup) a router says ready after 1 s: that boot is not under test.
//   - a scenario's settle (default 3 min after the last step): ends sooner, once the checker has seen
//     all it could: one ping interval + 10 s after the last step (a periodic report of the final
//     domains processed), the report grace of a host that came back Up, and 20 s without a state
//     change (libvirtWorld.settle). Seed 001 settles in ~70 s instead of 180 s.
//   - no other config is scaled: a scenario's steps and waits run as written, in real time.
//   - a stale-report fault also holds a StartCommand on the wire until the stale report is
//     collected, and counts the report's delay from that StartCommand's answer (live.StaleHold): the
//     order seed 001 needs, which the simulator gets from its timing.
//
// A scenario's own config for a key wins over this table.
var LibvirtScaling = map[string]string{
	"network.gc.interval": "10",
	"network.gc.wait":     "10",
}

// Router boot times on real domains (the guest's csc.delay): as in the simulator, 36–41 s.
const (
	libvirtRouterBoot      = 36 * time.Second
	libvirtRouterBootRange = 5 * time.Second
	libvirtPrimingBoot     = time.Second
	// libvirtCheckEvery is how often the checker looks at the records and libvirt's domains, besides
	// after every step of the scenario.
	libvirtCheckEvery = 300 * time.Millisecond
	// libvirtQuiet: a settle ends only after this long without a state change (libvirtWorld.settle).
	libvirtQuiet = 20 * time.Second
)

type libvirtWorld struct {
	c     *Cluster
	lo    LibvirtOptions
	ctx   context.Context
	base  *live.Env // clients, scenario, faults, checker, the database's clock
	msEnv *live.Env // the current management server incarnation, a process of base
	ln    *live.Listener
	addr  string // the management server's listen address (kept across restarts)
	hosts map[string]*lvHost

	mu      sync.Mutex
	rng     *rand.Rand
	priming atomic.Bool
	looks   detect.TwoLooks // the truth is confirmed by two checks in a row
	closed  bool
	// scenarioConfig is the scenario's own config (it wins over LibvirtScaling).
	scenarioConfig map[string]string
}

type lvHost struct {
	id    string
	hv    *libvirt.Host
	proxy *live.Proxy
	env   *live.Env // the current agent incarnation
	rec   *Recorder

	// stale is the host's stale-report fault on its agents' wire, with the StartCommand hold of
	// real domains (see live.StaleHold for why).
	stale *live.StaleReport
}

// NewLibvirtCluster builds a cluster on real domains and waits until every host is Up.
func NewLibvirtCluster(o Options, lo LibvirtOptions) (*Cluster, error) {
	if o.ManagementServers > 1 {
		return nil, LibvirtCapabilities.Refusal(PeerServers)
	}
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"h1"}
	}
	conf := map[string]string{}
	for k, v := range LibvirtScaling {
		conf[k] = v
	}
	for k, v := range o.Config {
		conf[k] = v
	}
	cfg, err := impl.NewConfig(conf)
	if err != nil {
		return nil, err
	}
	if lo.Run == "" {
		lo.Run = NewRunID()
	}
	if lo.Ctx == nil {
		lo.Ctx = context.Background()
	}
	w := &libvirtWorld{lo: lo, scenarioConfig: o.Config, ctx: lo.Ctx, base: live.NewEnv(), hosts: map[string]*lvHost{},
		rng: rand.New(rand.NewPCG(o.Seed, 0x11b7))}
	c := &Cluster{w: w, Config: cfg, Defects: o.Defects,
		tracker: invariant.NewTracker(), seen: map[string]bool{}, vmIDs: map[string]int64{}, netIDs: map[string]int64{}}
	w.c = c
	c.Rec = NewRecorder(time.Now)
	c.DB = impl.NewDB(w.base, c.Rec)
	fail := func(err error) (*Cluster, error) { w.close(); return nil, err }
	w.ln, err = listenAgents("127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	w.addr = w.ln.Addr()
	c.startServer()
	for _, h := range o.Hosts {
		if _, dup := w.hosts[h]; dup {
			return fail(fmt.Errorf("host %q is listed twice", h))
		}
		hv, err := libvirt.New(lo.URI, h, libvirt.Options{Run: lo.Run, BaseDir: lo.BaseDir, BootDelay: w.bootDelay})
		if err != nil {
			return fail(err)
		}
		lh := &lvHost{id: h, hv: hv, rec: c.Rec}
		lh.stale = &live.StaleReport{Hold: true, Log: func(detail string) {
			c.Rec.Emit(history.Event{Actor: "fault", Kind: history.Log, Object: "host:" + h, Detail: detail})
		}}
		w.hosts[h] = lh
		if lh.proxy, err = live.NewProxy("127.0.0.1:0", w.addr); err != nil {
			return fail(err)
		}
		lh.proxy.SetOrphanGrace(live.OrphanGrace)
		c.HostIDs = append(c.HostIDs, h)
		c.startAgent(h)
	}
	w.logf("run %s: management server on %s, hosts %v, %s guests", lo.Run, w.addr, c.HostIDs, w.hosts[c.HostIDs[0]].hv.VirtType())
	w.base.Go("checker", func() {
		for {
			w.base.Sleep(libvirtCheckEvery)
			c.checkNow()
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	if err := w.runUntil(deadline, c.allUp); err != nil {
		return fail(err)
	}
	if !c.allUp() {
		return fail(fmt.Errorf("hosts did not come up within 2 minutes"))
	}
	return c, nil
}

func (w *libvirtWorld) logf(format string, args ...any) {
	if w.lo.Log != nil {
		fmt.Fprintf(w.lo.Log, "csconform libvirt: "+format+"\n", args...)
	}
}

// bootDelay is the guest's csc.delay: how long a router takes to say ready.
func (w *libvirtWorld) bootDelay(spec impl.DomainSpec) time.Duration {
	if spec.Type != "DomainRouter" {
		return 0
	}
	if w.priming.Load() {
		return libvirtPrimingBoot
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.c.routerBoot; d > 0 {
		return d
	}
	return libvirtRouterBoot + time.Duration(w.rng.Int64N(int64(libvirtRouterBootRange)))
}

func (w *libvirtWorld) now() time.Time                { return time.Now() }
func (w *libvirtWorld) goTask(name string, fn func()) { w.base.Go(name, fn) }
func (w *libvirtWorld) sleep(d time.Duration)         { w.base.Sleep(d) }

func (w *libvirtWorld) pause(d time.Duration) {
	next := w.c.Rec.Next()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-next:
	case <-t.C:
	case <-w.base.Done():
	}
}
func (w *libvirtWorld) offset() time.Duration      { return 0 } // the wall clock already falls anywhere
func (w *libvirtWorld) steps() uint64              { return 0 }
func (w *libvirtWorld) capabilities() Capabilities { return LibvirtCapabilities }
func (w *libvirtWorld) clientEnv() impl.Env        { return w.base }

// setup(false) ends the scaling of LibvirtScaling (in force from the server's start to the end of
// priming): the steps meet CloudStack's values, or the scenario's own; setup(true) puts it back for
// a scenario's prime steps.
func (w *libvirtWorld) setup(on bool) {
	w.priming.Store(on)
	scale(w.c, w.scenarioConfig, on)
}

// scale sets each key of LibvirtScaling to its scaled value (on) or back to CloudStack's default,
// unless the scenario set it itself: the scaled values are for priming only. It goes through
// Cluster.SetConfig, so that the transition guards judge the priming under the values then in force.
func scale(c *Cluster, own map[string]string, on bool) {
	for k, scaled := range LibvirtScaling {
		if _, set := own[k]; set {
			continue
		}
		v := scaled
		if !on {
			ck, _ := impl.LookupConfigKey(k) // a key of LibvirtScaling always is one: the cluster's NewConfig refused it otherwise
			v = ck.Default
		}
		if c.Config.Get(k) == v {
			continue
		}
		if err := c.SetConfig(k, v); err != nil {
			panic(err) // a default or a scaled value always parses
		}
	}
}

func (w *libvirtWorld) runUntil(limit time.Time, done func() bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !done() && time.Now().Before(limit) {
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func (w *libvirtWorld) runFor(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-t.C:
		return nil
	}
}

// settle ends a scenario's settle (at most d) once the checker has seen everything the settle could
// still show, instead of always waiting d (the simulator's 3 minutes cost nothing; here they are real):
//
//   - one ping interval and 10 s after the last step: every host has sent a periodic report of its
//     domains as they are now, and the server has acted on it (power sync);
//   - a host that came back Up during the scenario has had its report grace (2 × ping.interval +
//     10 s): only then does the orphan-domain invariant judge its Stopped records (invariant.Host);
//   - no state change, call, return or fault was recorded in the last libvirtQuiet.
//
// The checker looks every libvirtCheckEvery all along, so nothing it could see is left unseen.
func (w *libvirtWorld) settle(d time.Duration) error {
	c := w.c
	start := time.Now()
	until := start.Add(c.Config.Seconds("ping.interval") + 10*time.Second)
	grace := 2*c.Config.Seconds("ping.interval") + 10*time.Second
	for _, h := range c.HostIDs {
		if up := c.Rec.HostUpSince(h); !up.IsZero() && up.Add(grace).After(until) {
			until = up.Add(grace)
		}
	}
	limit := start.Add(d)
	err := w.runUntil(limit, func() bool {
		now := time.Now()
		return !now.Before(until) && now.Sub(c.Rec.lastChange()) >= libvirtQuiet
	})
	w.logf("run %s settled after %s (scenario's settle %s)", w.lo.Run, time.Since(start).Round(time.Second), d)
	return err
}

// close ends every task and connection of the run, then removes its domains and files.
func (w *libvirtWorld) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	for _, a := range w.c.agentList() {
		a.Kill()
	}
	for _, h := range w.hosts {
		if h.env != nil {
			h.env.Close()
		}
		if h.proxy != nil {
			h.proxy.Close()
		}
		h.hv.Unsubscribe()
	}
	if w.msEnv != nil {
		w.msEnv.Close()
	}
	if w.ln != nil {
		w.ln.Close()
	}
	w.base.Close()
	w.base.Wait(5 * time.Second)
	for _, h := range w.hosts {
		_ = h.hv.Close()
	}
	if w.lo.KeepOnFailure && w.ctx.Err() == nil && len(w.c.Violations) > 0 {
		w.logf("run %s kept (remove it with csconform cleanup --run %s)", w.lo.Run, w.lo.Run)
		return
	}
	if w.lo.SerialLogs != "" {
		if err := w.keepSerialLogs(); err != nil {
			w.logf("keeping serial logs of run %s: %v", w.lo.Run, err)
		}
	}
	removed, err := libvirt.Cleanup(w.lo.URI, w.lo.BaseDir, w.lo.Run)
	if err != nil {
		w.logf("cleanup of run %s: %v", w.lo.Run, err)
	}
	w.logf("run %s cleaned up: %d domains and files removed", w.lo.Run, len(removed))
}

// keepSerialLogs copies every guest's serial log of the run into LibvirtOptions.SerialLogs.
func (w *libvirtWorld) keepSerialLogs() error {
	if err := os.MkdirAll(w.lo.SerialLogs, 0o755); err != nil {
		return err
	}
	var logs []string
	for _, h := range w.hosts { // every host has the run's directory
		logs, _ = filepath.Glob(filepath.Join(h.hv.RunDir(), "domains", "*", "*", "serial.log"))
		break
	}
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		dom := filepath.Base(filepath.Dir(f))
		host := filepath.Base(filepath.Dir(filepath.Dir(f)))
		if err := os.WriteFile(filepath.Join(w.lo.SerialLogs, w.lo.Run+"-"+host+"-"+dom+".serial.log"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (w *libvirtWorld) newServer() *impl.Server {
	c := w.c
	if w.ln == nil {
		// A restart listens again on the same address, where the proxies send the agents.
		var err error
		for i := 0; i < 50; i++ {
			if w.ln, err = listenAgents(w.addr); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			panic(fmt.Sprintf("management server cannot listen again on %s: %v", w.addr, err))
		}
	}
	w.msEnv = w.base.Child()
	return impl.NewServer("ms1", w.msEnv, c.DB, c.Config, c.Defects, w.msEnv.Transport(w.ln))
}

// stopServer kills the process first, then its sockets close (liveWorld.stopServer).
func (w *libvirtWorld) stopServer() {
	w.c.DB.Between(w.msEnv.Close)
	w.ln.Close()
	w.ln = nil
}

func (w *libvirtWorld) newAgent(h string) *impl.Agent {
	lh := w.hosts[h]
	lh.env = w.base.Child()
	a := impl.NewAgent(h, lh.env, lh.stale.Wrap(lh.env.Transport(&live.Dialer{Addr: lh.proxy.Addr(), Key: agentKey})),
		&agentHV{Host: lh.hv, env: lh.env, name: "agent/" + h + "/libvirt-events"}, lh.env.Sink(w.c.Rec))
	a.Defects = w.c.Defects
	return a
}

// killAgent ends the agent's process before its socket closes (liveWorld.killAgent).
func (w *libvirtWorld) killAgent(h string, a *impl.Agent) {
	w.hosts[h].env.Close()
	a.Kill()
}

func (w *libvirtWorld) agentStopped(h string) {
	lh := w.hosts[h]
	lh.hv.Unsubscribe()
	lh.env.Close()
}

func (w *libvirtWorld) cutLink(h string, on bool) {
	if on {
		w.hosts[h].proxy.Cut()
	} else {
		w.hosts[h].proxy.Heal()
	}
}

func (w *libvirtWorld) delayNextOutOfBand(h string, d time.Duration) { w.hosts[h].stale.Arm(d) }

func (w *libvirtWorld) running(h string) []string { return w.hosts[h].hv.Running() }

// crash kills the domain's QEMU (kill -9): libvirt says STOPPED/FAILED whatever the detail asked.
func (w *libvirtWorld) crash(h, dom, detail string) error { return w.hosts[h].hv.Crash(dom) }

func (w *libvirtWorld) guestShutdown(h, dom string) error { return w.hosts[h].hv.GuestPoweroff(dom) }

func (w *libvirtWorld) domains() []invariant.Domain {
	var out []invariant.Domain
	for _, h := range w.c.HostIDs {
		ds, err := w.hosts[h].hv.Domains()
		if err != nil {
			w.logf("host %s: listing domains: %v", h, err)
			continue
		}
		for _, d := range ds {
			out = append(out, invariant.Domain{HostID: h, Name: d.Name, Running: d.Running, IPs: d.IPs, Disks: d.Disks})
		}
	}
	return out
}

func (w *libvirtWorld) confirm(vs []invariant.Violation) []invariant.Violation {
	return w.looks.Confirm(vs)
}

// ---- agent side

// agentHV is the libvirt host as one agent incarnation sees it: lifecycle events, which libvirt
// delivers on the driver's goroutine, are queued and handled one at a time by a task of the agent,
// so a killed agent handles none and the driver's event stream never waits for the agent.
type agentHV struct {
	*libvirt.Host
	env  *live.Env
	name string
}

func (a *agentHV) Subscribe(fn func(impl.LifecycleEvent)) {
	ch := make(chan impl.LifecycleEvent, 1024)
	a.Host.Subscribe(func(ev impl.LifecycleEvent) {
		select {
		case ch <- ev:
		default: // the agent is gone or hopelessly behind: libvirt drops events too
		}
	})
	a.env.Go(a.name, func() {
		for {
			select {
			case ev := <-ch:
				fn(ev)
			case <-a.env.Done():
				return
			}
		}
	})
}

var _ substrate = (*libvirtWorld)(nil)
