package harness

// The live world: the reference management server and one agent per host run in this process on
// goroutines, speak TCP over loopback through a cutting proxy per host (drivers/live), and the hosts
// are drivers/live's FAKE hypervisor. Unlike the libvirt world nothing here is slow for real, so the
// whole world runs on one scaled clock: every Sleep, timeout and timestamp is in world time, which
// passes Speed times faster than the wall clock. Timings relative to each other stay as in the
// simulator (router boots 36–41 s, guests 6–8 s, CloudStack's config), only real latencies (a TCP
// round trip, an HTTP request) grow by Speed in world time.
//
// With API set, the client operations go through CloudStack's API: the management server process
// serves impl/cloudapi on its own HTTP listener (closed while it is down), and the harness drives it
// with cloudstack-go (harness/cloudclient).

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/harness/cloudclient"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/impl/cloudapi"
	"github.com/csconform/csconform/model/invariant"
)

// LiveOptions say how to run the live world.
type LiveOptions struct {
	// Speed is how many world seconds pass per wall-clock second (default 10).
	Speed float64
	// API: drive the server through CloudStack's API with cloudstack-go instead of calling it.
	API bool
	// AtEnd, if set, is called with the cluster when it is closed after it came up (for a scenario:
	// once it has run and settled), while the world still runs: its API, agents and hosts are up, so
	// a tool can look at it from outside (csconform audit's end-to-end test does).
	AtEnd func(c *Cluster)
}

// ---- the world

type liveWorld struct {
	c     *Cluster
	lo    LiveOptions
	base  *live.Env // clients, scenario, faults, checker, the database's clock (scaled)
	msEnv *live.Env // the current management server incarnation, a process of base
	ln    *live.Listener
	addr  string
	hosts map[string]*liveHost

	// the API face: its listener lives and dies with the management server
	apiAddr string
	apiLn   net.Listener
	apiSrv  *http.Server
	creds   cloudapi.Credentials

	mu      sync.Mutex
	rng     *rand.Rand
	priming atomic.Bool
	looks   detect.TwoLooks // the truth is confirmed by two checks in a row
	closed  bool
	up      bool // NewLiveCluster finished
	// scenarioConfig is the scenario's own config (it wins over LibvirtScaling).
	scenarioConfig map[string]string
	// hooks are tests' ways into a process, each taken when an incarnation starts.
	hooks liveHooks
}

// liveHooks let a test stand inside a process: api wraps the API's handler inside the server's process
// (a request that waits there), agentHV the hypervisor as an agent sees it.
type liveHooks struct {
	api     func(http.Handler) http.Handler
	agentHV func(impl.Hypervisor) impl.Hypervisor
}

type liveHost struct {
	id    string
	hv    *live.FakeHost
	proxy *live.Proxy
	env   *live.Env                                 // the current agent incarnation
	sub   atomic.Pointer[func(impl.LifecycleEvent)] // the current agent's listener
	// stale is the host's stale-report fault on its agents' wire, armed in wall time, with the
	// StartCommand hold the libvirt world has (live.StaleHold): see delayNextOutOfBand.
	stale *live.StaleReport
}

// NewLiveCluster builds a cluster in the live world and waits until every host is Up.
func NewLiveCluster(o Options, lo LiveOptions) (*Cluster, error) {
	if o.ManagementServers > 1 {
		return nil, LiveCapabilities.Refusal(PeerServers)
	}
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"h1"}
	}
	if lo.Speed <= 0 {
		lo.Speed = 10
	}
	// As in the libvirt world, the network GC runs every 10 s while the setup primes its networks
	// (LibvirtScaling), then at the scenario's or CloudStack's values.
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
	if lo.Speed <= 0 {
		lo.Speed = 10
	}
	base := live.NewScaledEnv(lo.Speed)
	w := &liveWorld{lo: lo, scenarioConfig: o.Config, base: base, hosts: map[string]*liveHost{},
		rng: rand.New(rand.NewPCG(o.Seed, 0x11e))}
	c := &Cluster{w: w, Config: cfg, Defects: o.Defects,
		tracker: invariant.NewTracker(), seen: map[string]bool{}, vmIDs: map[string]int64{}, netIDs: map[string]int64{}}
	w.c = c
	c.Rec = NewRecorder(base.Now)
	c.DB = impl.NewDB(w.base, c.Rec)
	fail := func(err error) (*Cluster, error) { w.close(); return nil, err }
	if w.ln, err = listenAgents("127.0.0.1:0"); err != nil {
		return fail(err)
	}
	w.addr = w.ln.Addr()
	if lo.API {
		w.creds = cloudapi.Credentials{APIKey: "live-" + NewRunID(), SecretKey: fmt.Sprintf("%x", w.rng.Uint64()) + NewRunID()}
		if w.apiLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fail(err)
		}
		w.apiAddr = w.apiLn.Addr().String()
	}
	c.startServer()
	for _, h := range o.Hosts {
		if _, dup := w.hosts[h]; dup {
			return fail(fmt.Errorf("host %q is listed twice", h))
		}
		lh := &liveHost{id: h, hv: live.NewFakeHost(w.base, h), stale: &live.StaleReport{Hold: true}}
		lh.hv.BootDelay = w.bootDelay
		lh.hv.Peers = func(id string) *live.FakeHost {
			if p := w.hosts[id]; p != nil {
				return p.hv
			}
			return nil
		}
		lh.hv.Subscribe(func(ev impl.LifecycleEvent) {
			if fn := lh.sub.Load(); fn != nil {
				(*fn)(ev)
			}
		})
		w.hosts[h] = lh
		if lh.proxy, err = live.NewProxy("127.0.0.1:0", w.addr); err != nil {
			return fail(err)
		}
		lh.proxy.SetOrphanGrace(time.Duration(float64(live.OrphanGrace) / lo.Speed)) // world time
		c.HostIDs = append(c.HostIDs, h)
		c.startAgent(h)
	}
	if lo.API {
		c.api = newAPIClient(c, cloudclient.New(cloudclient.Options{
			URL: "http://" + w.apiAddr + "/client/api", APIKey: w.creds.APIKey, SecretKey: w.creds.SecretKey,
			Sleep: w.base.Sleep, Now: base.Now, Poll: time.Second}))
	}
	w.base.Go("checker", func() {
		for {
			w.base.Sleep(time.Second)
			c.checkNow()
		}
	})
	if err := w.runUntil(base.Now().Add(5*time.Minute), c.allUp); err != nil {
		return fail(err)
	}
	if !c.allUp() {
		return fail(fmt.Errorf("hosts did not come up within 5 minutes of world time"))
	}
	w.up = true
	return c, nil
}

// APIEndpoint is the live world's CloudStack API (with LiveOptions.API): its URL and key pair.
func (c *Cluster) APIEndpoint() (url string, creds cloudapi.Credentials, ok bool) {
	w, ok := c.w.(*liveWorld)
	if !ok || !w.lo.API {
		return "", cloudapi.Credentials{}, false
	}
	return "http://" + w.apiAddr + "/client/api", w.creds, true
}

// HostDomains is what the hosts run now, as the invariants see it (the driver's truth).
func (c *Cluster) HostDomains() []invariant.Domain { return c.w.domains() }

// bootDelay is the simulator's: routers 36–41 s (1 s while priming, or the scenario's), guests 6–8 s.
func (w *liveWorld) bootDelay(spec impl.DomainSpec) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if spec.Type != "DomainRouter" {
		return 6*time.Second + time.Duration(w.rng.Int64N(int64(2*time.Second)))
	}
	if w.priming.Load() {
		return time.Second
	}
	if d := w.c.routerBoot; d > 0 {
		return d
	}
	return 36*time.Second + time.Duration(w.rng.Int64N(int64(5*time.Second)))
}

func (w *liveWorld) now() time.Time                { return w.base.Now() }
func (w *liveWorld) goTask(name string, fn func()) { w.base.Go(name, fn) }
func (w *liveWorld) sleep(d time.Duration)         { w.base.Sleep(d) }
func (w *liveWorld) offset() time.Duration         { return 0 }
func (w *liveWorld) capabilities() Capabilities    { return LiveCapabilities }
func (w *liveWorld) clientEnv() impl.Env           { return w.base }
func (w *liveWorld) steps() uint64                 { return 0 }

// setup(false) ends the scaling of LibvirtScaling: the steps meet CloudStack's values, or the
// scenario's own.
func (w *liveWorld) setup(on bool) {
	w.priming.Store(on)
	scale(w.c, w.scenarioConfig, on)
}

func (w *liveWorld) runUntil(limit time.Time, done func() bool) error {
	for !done() && w.base.Now().Before(limit) {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// pause polls at the world's pace, as the simulator does (the live world's clock runs faster than
// the wall clock, so waking on each event would not save anything).
func (w *liveWorld) pause(d time.Duration) { w.sleep(d) }

// settle runs for the scenario's whole settle time.
func (w *liveWorld) settle(d time.Duration) error { return w.runFor(d) }

func (w *liveWorld) runFor(d time.Duration) error {
	time.Sleep(w.base.Wall(d))
	return nil
}

func (w *liveWorld) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	if w.up && w.lo.AtEnd != nil {
		w.lo.AtEnd(w.c)
	}
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
	}
	w.stopAPI()
	if w.msEnv != nil {
		w.msEnv.Close()
	}
	if w.ln != nil {
		w.ln.Close()
	}
	w.base.Close()
	w.base.Wait(5 * time.Second)
}

func relisten(addr string, listen func(string) error) {
	var err error
	for i := 0; i < 50; i++ {
		if err = listen(addr); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	panic(fmt.Sprintf("cannot listen again on %s: %v", addr, err))
}

// agentKey is the agent key of the live worlds' servers and agents (this process's alone): a process
// that reaches a world's agent port without it cannot pass for one of its hosts.
var agentKey = func() string {
	b := make([]byte, 24)
	crand.Read(b) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b)
}()

// listenAgents listens for the agents of a live world, which must present agentKey.
func listenAgents(addr string) (*live.Listener, error) {
	ln, err := live.Listen(addr)
	if err == nil {
		ln.Key = agentKey
	}
	return ln, err
}

func (w *liveWorld) newServer() *impl.Server {
	c := w.c
	if w.ln == nil {
		relisten(w.addr, func(a string) (err error) { w.ln, err = listenAgents(a); return })
	}
	w.msEnv = w.base.Child()
	s := impl.NewServer("ms1", w.msEnv, c.DB, c.Config, c.Defects, w.msEnv.Transport(w.ln))
	if w.lo.API {
		if w.apiLn == nil {
			relisten(w.apiAddr, func(a string) (err error) { w.apiLn, err = net.Listen("tcp", a); return })
		}
		var api http.Handler = cloudapi.New(s, cloudapi.Options{Now: w.base.Now}, w.creds)
		if w.hooks.api != nil {
			api = w.hooks.api(api)
		}
		mux := http.NewServeMux()
		mux.Handle("/client/api", w.msEnv.Handler(api))
		w.apiSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go w.apiSrv.Serve(w.apiLn)
	}
	return s
}

func (w *liveWorld) stopAPI() {
	if w.apiSrv != nil {
		w.apiSrv.Close() // closes the listener and every connection
		w.apiSrv = nil
	} else if w.apiLn != nil {
		w.apiLn.Close()
	}
	w.apiLn = nil
}

// stopServer kills the process first, then its sockets close (as the kernel closes a killed
// process's): a reader woken by its closed connection finds its process dead. The kill falls between
// two database accesses (DB.Between): a thread waiting for the database then finds its process dead.
func (w *liveWorld) stopServer() {
	w.c.DB.Between(w.msEnv.Close)
	w.ln.Close()
	w.ln = nil
	w.stopAPI()
}

func (w *liveWorld) newAgent(h string) *impl.Agent {
	lh := w.hosts[h]
	lh.env = w.base.Child()
	var hv impl.Hypervisor = &liveAgentHV{lh}
	if w.hooks.agentHV != nil {
		hv = w.hooks.agentHV(hv)
	}
	a := impl.NewAgent(h, lh.env, lh.stale.Wrap(lh.env.Transport(&live.Dialer{Addr: lh.proxy.Addr(), Key: agentKey})), hv, lh.env.Sink(w.c.Rec))
	a.Defects = w.c.Defects
	return a
}

// killAgent ends the agent's process before its socket closes: a goroutine woken by the close, or
// calling into the agent meanwhile (a lifecycle callback), finds it dead and writes nothing.
func (w *liveWorld) killAgent(h string, a *impl.Agent) {
	w.hosts[h].env.Close()
	a.Kill()
}

func (w *liveWorld) agentStopped(h string) {
	lh := w.hosts[h]
	lh.sub.Store(nil)
	lh.env.Close()
}

func (w *liveWorld) cutLink(h string, on bool) {
	if on {
		w.hosts[h].proxy.Cut()
	} else {
		w.hosts[h].proxy.Heal()
	}
}

// delayNextOutOfBand arms the stale-report fault: the next out-of-band report reaches the server d
// of world time late. As in the libvirt world, a StartCommand arriving while the report is armed and
// not yet collected is held on the wire until it is, and the delay counts from that start's answer:
// the order seed 001 and stale-report-past-graceful need ("collected while web1's domain does not
// exist yet, processed after the StartAnswer"), which the simulator gets from its timing. Without the
// hold the live world raced for it in real time: the harness's crash step (a 50 ms world poll after
// start-sent, 2.5 ms of wall time at speed 20) against the StartCommand's trip and a 100 ms create,
// and a loaded machine lost the damage (csconform audit's e2e test found none).
func (w *liveWorld) delayNextOutOfBand(h string, d time.Duration) {
	w.hosts[h].stale.Arm(w.base.Wall(d))
}

func (w *liveWorld) failStarts(h string, on bool)      { w.hosts[h].hv.FailStarts(on) }
func (w *liveWorld) running(h string) []string         { return w.hosts[h].hv.Running() }
func (w *liveWorld) crash(h, dom, detail string) error { return w.hosts[h].hv.Crash(dom, detail) }
func (w *liveWorld) guestShutdown(h, dom string) error { return w.hosts[h].hv.Crash(dom, "SHUTDOWN") }

func (w *liveWorld) domains() []invariant.Domain {
	var out []invariant.Domain
	for _, h := range w.c.HostIDs {
		for _, d := range w.hosts[h].hv.Domains() {
			out = append(out, invariant.Domain{HostID: h, Name: d.Name, Running: true, IPs: d.IPs, Disks: d.Disks})
		}
	}
	return out
}

func (w *liveWorld) confirm(vs []invariant.Violation) []invariant.Violation {
	return w.looks.Confirm(vs)
}

// liveAgentHV is the fake host as one agent incarnation sees it: only the current agent hears its
// lifecycle events.
type liveAgentHV struct{ h *liveHost }

func (a *liveAgentHV) Start(d impl.DomainSpec) error { return a.h.hv.Start(d) }
func (a *liveAgentHV) WaitReady(name string, timeout time.Duration) error {
	return a.h.hv.WaitReady(name, timeout)
}
func (a *liveAgentHV) Stop(name string) error                 { return a.h.hv.Stop(name) }
func (a *liveAgentHV) Running() []string                      { return a.h.hv.Running() }
func (a *liveAgentHV) DeleteVolume(path string) error         { return a.h.hv.DeleteVolume(path) }
func (a *liveAgentHV) Subscribe(fn func(impl.LifecycleEvent)) { a.h.sub.Store(&fn) }
func (a *liveAgentHV) MigrateTo(name, dest string) error      { return a.h.hv.MigrateTo(name, dest) }
func (a *liveAgentHV) Receiving(name string) bool             { return a.h.hv.Receiving(name) }

var _ substrate = (*liveWorld)(nil)
