package external

// The external world: a CloudStack the harness did not start (a real one, or csconform's reference
// server behind its API face). The harness starts nothing. It creates the scenario's networks and
// VMs through the API with cloudstack-go (harness/cloudclient), names each csc-<run>-<name>, runs the
// steps, and on the way out — success, failure or Ctrl-C — destroys and expunges every VM and deletes
// every network it created, and nothing else.
//
// What it sees is what anyone outside sees: the records through list* commands (harness/audit's
// reading, read-only) and the hosts' domains through their libvirt URIs (read-only), polled during
// the run and at the end. The invariants are checked on those snapshots (audit.Snapshot →
// model/invariant), limited to what the run created, and every snapshot is written into the history as
// observations, so model/linear checks the client operations against what was observed.
//
// Faults that need a host (an agent stopped, a link cut, a domain killed) go through faults/inject, on
// the operator's allowlist and with --yes; faults that need the server's internals are refused up
// front, as is anything else the run cannot do from outside.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/faults/inject"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/audit"
	"github.com/csconform/csconform/harness/cloudclient"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Def is the external world, as harness.Run opens it with its Options (harness.RunOptions.Own):
// csconform repro --api.
var Def = harness.WorldDef{Name: "external", Doc: "a real CloudStack through its API, csconform repro --api; faults through csconform inject",
	Caps: Capabilities, Open: open, Preflight: preflight}

// Capabilities: a real CloudStack seen through its API; the faults that need a host go through
// csconform inject (Preflight checks the host access).
var Capabilities = capabilities()

func capabilities() harness.Capabilities {
	c := harness.Capabilities{World: "against an external CloudStack", Lacks: map[harness.Capability]string{
		harness.VirtualTime:                            harness.WhyRealTime,
		harness.DefectSwitches:                         "a real CloudStack runs its own code: the profile (--expect) only names the outcome it is judged against",
		harness.PeerServers:                            "the external CloudStack has the servers it has; run the scenario without the field",
		harness.ServerLog:                              harness.WhyNoServerLog,
		harness.PrimedNetworks:                         "that needs the network GC's timing; create and shut the network down by hand",
		harness.AgedNetworks:                           "that needs a write to CloudStack's database (csconform inject backdate, by hand)",
		harness.SetConfigOp:                            "changing the CloudStack's global configuration is not done from here; set it with updateConfiguration first and drop the step",
		harness.HAVMs:                                  "the run deploys with the chosen offering; pick an HA offering instead",
		harness.DetectorCap(invariant.StorageLeak):     "the API lists no primary storage files",
		harness.DetectorCap(invariant.TransitionGuard): "the server's writes, with their threads, reasons and jobs, are in its database and log, not in the API (logcheck judges a real server's log against the guards)",
		harness.DetectorCap(invariant.HaPromise):       "HA's log lines are the server's, not the API's (op_ha_work is no API's)",
	}}.WithLacks(harness.RealTimeLacks).WithLacks(harness.OutsideLacks)
	for _, k := range faults.Kinds {
		if ef, ok := externalFaults[k.Name]; !ok || ef.inject == "" {
			c.Lacks[harness.FaultCap(k.Name)] = cmp.Or(ef.why, "unknown to the external world")
		}
	}
	return c
}

// Options say which CloudStack to drive and how to see its hosts.
type Options struct {
	// API is the endpoint, the key pair and the zone/offering/template choices ("" = the first usable
	// one the API lists). Sleep, Now and Ctx are set by the run.
	API     cloudclient.Options
	Timeout time.Duration // per list request (default 30 s)
	// HostMap maps the scenario's hosts (h1, h2) to CloudStack's host names (default: the same name).
	HostMap map[string]string
	// Hosts give the hosts' domains, read-only (audit.LibvirtHost); HostsFor makes them from the
	// recorded hosts instead (--hosts-from-api).
	Hosts        []audit.HostSource
	HostsFor     func(audit.Records) ([]audit.HostSource, error)
	DomainPrefix string // as audit's: stripped from domain names to get instance names
	// Run names what the run creates, csc-<run>-<name> (default NewRunID()).
	Run string
	// Inject is host access for the faults that need it; nil: none, and such a step is refused.
	Inject *Inject
	// Faults is where the faults come from: inject (Inject's host access) or the CloudStack's own
	// simulator (configureSimulator; simulator.go).
	Faults FaultSource
	Ctx    context.Context // cancelled (Ctrl-C): the run stops, heals its faults and removes what it made
	Log    io.Writer       // progress lines (nil: none)
	// Now and Speed are the clock of the server under test: Speed world seconds per wall second
	// (default 1; a test drives the live world's reference server, which runs faster).
	Now   func() time.Time
	Speed float64
	// Poll is how often (wall time) the records and domains are read (default 1 s).
	Poll time.Duration
}

// Inject is what the faults that need host access run through.
type Inject struct {
	Exec   inject.Executor
	Policy inject.Policy
	Log    *inject.Log
	// OpenLog, if set and Log is not, opens the log before the first fault (a run without faults
	// writes none).
	OpenLog func() (*inject.Log, error)
	Out     io.Writer // inject's own lines (apply, heal)
	Yes     bool      // without it no fault is applied: a step that needs one is refused up front
	// Targets maps CloudStack's host names to the names inject runs commands on (ssh); default the
	// same. DBHost is the database host (backdate).
	Targets  map[string]string
	MgmtPort int // disconnect: the agent port (default 8250)
}

// Close closes the fault log if a fault opened it (OpenLog).
func (in *Inject) Close() error {
	if in.Log == nil {
		return nil
	}
	return in.Log.Close()
}

// Prefix is what the names of a run's networks and VMs start with.
func Prefix(run string) string { return "csc-" + run + "-" }

// externalFault is how a scenario fault is applied from outside: through inject, or not at all.
type externalFault struct {
	inject string // inject's fault kind ("": not available)
	why    string // why not, when not
}

var externalFaults = map[string]externalFault{
	"agent-restart":    {inject: inject.AgentRestart},
	"agent-kill":       {inject: inject.AgentKill},
	"disconnect":       {inject: inject.Disconnect},
	"crash":            {inject: inject.Crash},
	"guest-shutdown":   {why: "a guest powering itself off needs the guest's console: csconform inject cannot"},
	"stale-report":     {why: "delaying the agent's next out-of-band report needs the agent's internals"},
	"slow-router-boot": {why: "the routers' boot time is the hypervisor's internals (csconform inject slow-router-boot suspends one router by hand)"},
	"ms-restart":       {why: "restarting the management server with its database kept needs the server's host: csconform inject cannot"},
	"peer-stop":        {why: "stopping one management server of several needs its host: csconform inject cannot"},
	"backdate":         {why: "backdating a network writes CloudStack's database: run csconform inject backdate by hand"},
	"host-power-off":   {why: "powering a real host off needs its BMC (IPMI/Redfish): csconform inject does not"},
	"host-remove":      {why: "removing a host is an operator's deleteHost (forced=true): do it by hand"},
	"host-unreachable": {why: "use disconnect with a duration past the ping timeout (ping.interval × ping.timeout)"},
	"heartbeat-fail":   {why: "failing a host's heartbeat writes needs the host's NFS mount of the primary storage: csconform inject cannot"},
	"start-fails":      {why: "making a real host's QEMU fail its starts needs the host's hypervisor: csconform inject cannot"},
}

// Preflight says what stands in the way of running sc externally with these options, step by step:
// nil means it can run.
// expect is the profile whose expectations the outcome is compared with ("": none).
func (eo Options) Preflight(sc *harness.Scenario, expect string) error {
	var errs []error
	caps := eo.capabilities()
	for _, r := range caps.Refusals(sc) {
		errs = append(errs, errors.New(r))
	}
	for i, st := range sc.Steps {
		if st.Fault != "" && eo.Faults == FaultsInject && caps.Can(harness.FaultCap(st.Fault)) {
			errs = append(errs, eo.hostAccess(fmt.Sprintf("step %d", i+1), st)...)
		}
	}
	if expect != "" {
		if _, ok := sc.Expect[expect]; !ok {
			errs = append(errs, fmt.Errorf("--expect %s: scenario %s states no outcome for %s (it has: %s)", expect, sc.Name, expect, strings.Join(slices.Sorted(maps.Keys(sc.Expect)), ", ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("scenario %s cannot run externally:\n  %s", sc.Name, strings.Join(errStrings(errs), "\n  "))
	}
	return nil
}

func errStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// hostAccess checks a fault step has what inject needs: an executor, --yes, the host allowlisted
// (and, for a crash, a domain allowlist).
func (eo Options) hostAccess(where string, st harness.Step) []error {
	what := fmt.Sprintf("%s (fault %s", where, st.Fault)
	if st.Host != "" {
		what += " on " + st.Host
	}
	what += ")"
	in := eo.Inject
	if in == nil || in.Exec == nil {
		return []error{fmt.Errorf("%s needs host access, which this run does not have: give --allow-host PATTERN and --yes (and --ssh-user/--ssh-opt, or --local)", what)}
	}
	var errs []error
	if !in.Yes {
		errs = append(errs, fmt.Errorf("%s needs host access: add --yes to let the run apply it through csconform inject", what))
	}
	if len(in.Policy.AllowHosts) == 0 {
		errs = append(errs, fmt.Errorf("%s needs host access: give --allow-host PATTERN for the hosts it may touch", what))
	}
	if st.Host != "" && len(in.Policy.AllowHosts) > 0 {
		target := in.target(eo.hostName(st.Host))
		if err := in.Policy.Check(inject.Plan{Targets: []string{"host:" + target}}); err != nil {
			errs = append(errs, fmt.Errorf("%s: host %s is not allowlisted (--allow-host)", what, target))
		}
	}
	if st.Fault == "crash" && len(in.Policy.AllowVMs) == 0 {
		errs = append(errs, fmt.Errorf("%s needs --allow-vm PATTERN for the domains it may kill", what))
	}
	return errs
}

func (in *Inject) target(host string) string {
	if t, ok := in.Targets[host]; ok {
		return t
	}
	return host
}

// hostName is CloudStack's name for a scenario host.
func (eo Options) hostName(h string) string {
	if n, ok := eo.HostMap[h]; ok {
		return n
	}
	return h
}

// preflight is the external world's check before a run: an API to run against, and
// Preflight.
func preflight(sc *harness.Scenario, o harness.RunOptions) error {
	eo, err := harness.OwnOptions[Options](o, "external")
	if err != nil {
		return err
	}
	if eo.API.URL == "" {
		return errors.New("no API URL")
	}
	return eo.Preflight(sc, o.Profile)
}

// open connects to an external CloudStack (o.External). Every VM and network the run creates
// is removed by Close, whatever the outcome; what could not be is in Result.Leftovers.
func open(sc *harness.Scenario, _ impl.Switches, o harness.RunOptions) (_ harness.World, err error) {
	eo, err := harness.OwnOptions[Options](o, "external")
	if err != nil {
		return nil, err
	}
	if eo.Ctx == nil {
		eo.Ctx = cmp.Or(o.Ctx, context.Background())
	}
	if eo.Run == "" {
		eo.Run = harness.NewRunID()
	}
	if !safeRun.MatchString(eo.Run) {
		return nil, fmt.Errorf("run id %q: letters and digits only", eo.Run)
	}
	if eo.Speed <= 0 {
		eo.Speed = 1
	}
	if eo.Now == nil {
		eo.Now = time.Now
	}
	if eo.Poll <= 0 {
		eo.Poll = time.Second
	}
	if eo.Timeout <= 0 {
		eo.Timeout = 30 * time.Second
	}
	w := &extWorld{eo: eo, sc: sc, prefix: Prefix(eo.Run), vmIDs: map[string]string{}, netIDs: map[string]string{},
		instances: map[string]bool{}, vmInstance: map[string]string{}, listed: map[string]bool{}, ipHolder: map[string]string{}, ourVols: map[string]bool{}, hostState: map[string]string{}}
	w.secrets = []string{eo.API.SecretKey, eo.API.APIKey}
	defer func() { err = w.redactErr(err) }()
	w.rec = harness.NewRecorder(eo.Now)
	w.ro = audit.NewAPIClient(audit.APIOptions{URL: eo.API.URL, APIKey: eo.API.APIKey, SecretKey: eo.API.SecretKey, Zone: eo.API.Zone, Timeout: eo.Timeout, Insecure: eo.API.Insecure})
	ao := eo.API
	ao.Sleep, ao.Now, ao.Ctx = func(d time.Duration) { w.sleepWorld(d) }, eo.Now, eo.Ctx
	w.cc = cloudclient.New(ao)
	if err := w.connect(); err != nil {
		return nil, err
	}
	w.start = eo.Now()
	r := &extRun{w: w, RealTime: harness.NewRealTime(eo.Ctx)}
	r.Background(func(bg context.Context) {
		for harness.SleepCtx(bg, eo.Poll) {
			w.check()
		}
	})
	return r, nil
}

var safeRun = regexp.MustCompile(`^[A-Za-z0-9]{1,20}$`)

type extWorld struct {
	eo     Options
	sc     *harness.Scenario
	prefix string
	rec    *harness.Recorder
	ro     *cs.CloudStackClient // read-only: the records
	cc     *cloudclient.Client  // the client operations
	hosts  []audit.HostSource
	start  time.Time
	grace  time.Duration
	chosen string

	secrets []string

	mu         sync.Mutex
	vmIDs      map[string]string // scenario VM name -> uuid
	netIDs     map[string]string // scenario network name -> uuid
	instances  map[string]bool   // instance names of the run's VMs and routers, ever seen
	vmInstance map[string]string // a VM's uuid -> its instance name, read at deploy
	listed     map[string]bool   // VMs the API listed at least once
	ipHolder   map[string]string // guest address -> "vm:<uuid>" or "free", as last listed
	ourVols    map[string]bool
	hostState  map[string]string
	last       *audit.Records
	timeline   []string
	viols      []harness.Violation
	checkMu    sync.Mutex
	checks     harness.OutsideChecks
	startSeen  map[string]bool // VMs seen Starting (the start-sent condition, from outside)
	faultSeq   int
	mocks      []liveMock // simulator mocks configured and not cleared yet
}

// sleepWorld sleeps d of the server's time; false if the run was cancelled meanwhile.
func (w *extWorld) sleepWorld(d time.Duration) bool {
	return harness.SleepCtx(w.eo.Ctx, time.Duration(float64(d)/w.eo.Speed))
}

// redact takes the key pair and any request's query string out of a text.
func (w *extWorld) redact(s string) string {
	s = queryString.ReplaceAllString(s, "?…")
	for _, k := range w.secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, "<hidden>")
		}
	}
	return s
}

// queryString is a request's parameters in an error text (net/http quotes the URL it failed on).
var queryString = regexp.MustCompile(`\?[^"\s)]*=[^"\s]*`)

func (w *extWorld) redactErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(w.redact(err.Error()))
}

func (w *extWorld) logf(format string, args ...any) {
	if w.eo.Log != nil {
		fmt.Fprintln(w.eo.Log, w.redact(fmt.Sprintf("csconform external: "+format, args...)))
	}
}

func (w *extWorld) note(format string, args ...any) {
	line := w.redact(fmt.Sprintf("%s "+format, append([]any{harness.Clock(w.eo.Now(), w.start)}, args...)...))
	w.mu.Lock()
	w.timeline = append(w.timeline, line)
	w.mu.Unlock()
	w.logf("%s", line)
}

// connect reads the records once (the API answers, the keys are good), checks the scenario's hosts
// and configuration against the server, reads every host's domains once, and picks what to deploy.
func (w *extWorld) connect() error {
	rec, err := audit.FromAPI(w.ro, w.eo.API.Zone)
	if err != nil {
		return fmt.Errorf("the API at %s: %v%s", w.eo.API.URL, w.redact(err.Error()), hint(err))
	}
	var names []string
	up := map[string]string{}
	for _, h := range rec.Hosts {
		names = append(names, h.Name)
		up[h.Name] = h.State
	}
	for _, h := range w.sc.Hosts {
		n := w.eo.hostName(h)
		if _, ok := up[n]; !ok {
			return fmt.Errorf("scenario host %s: the API lists no Routing host %q (it lists: %s); map it with --map-host %s=NAME", h, n, strings.Join(orNoneList(names), ", "), h)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.sc.Config)) {
		v, err := w.cc.Config(k)
		if err != nil {
			return fmt.Errorf("scenario %s needs %s=%s; the server: %v", w.sc.Name, k, w.sc.Config[k], w.redact(err.Error()))
		}
		if !sameConfig(v, w.sc.Config[k]) {
			return fmt.Errorf("scenario %s needs %s=%s, the server has %s=%s: set it (updateConfiguration) before the run", w.sc.Name, k, w.sc.Config[k], k, v)
		}
	}
	w.grace = 2*60*time.Second + 10*time.Second
	if v, err := w.cc.Config("ping.interval"); err == nil {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			w.grace = 2*time.Duration(s*float64(time.Second)) + 10*time.Second
		}
	}
	w.hosts = w.eo.Hosts
	if w.eo.HostsFor != nil {
		if w.hosts, err = w.eo.HostsFor(rec); err != nil {
			return err
		}
	}
	if len(w.hosts) == 0 && w.eo.Faults != FaultsSimulator {
		return errors.New("no host to read domains from: give --host NAME=URI or --hosts-from-api TEMPLATE")
	}
	for _, h := range w.hosts {
		hd, err := h.Domains()
		if err != nil {
			return fmt.Errorf("reading a host's domains: %v", err)
		}
		// the records place VMs on hosts by name: a host read under another name would make every
		// domain on it look misplaced
		if _, ok := up[hd.Host]; !ok {
			return fmt.Errorf("host %s: the API lists no Routing host of that name (it lists: %s); name the hosts as CloudStack does", hd.Host, strings.Join(orNoneList(names), ", "))
		}
	}
	if w.chosen, err = w.cc.Discover(); err != nil {
		return fmt.Errorf("the API at %s: %v", w.eo.API.URL, w.redact(err.Error()))
	}
	return nil
}

// hint adds what a person should check for the usual mistakes.
func hint(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "error 401"), strings.Contains(s, "error 432"):
		return " (check the key pair: --api-key/--secret-key, $CSCONFORM_API_KEY/$CSCONFORM_SECRET_KEY or --api-keys-file, and that the user may call list* commands)"
	case strings.Contains(s, "connection refused"), strings.Contains(s, "no such host"), strings.Contains(s, "timeout"):
		return " (is the URL right and the management server up?)"
	}
	return ""
}

func orNoneList(x []string) []string {
	if len(x) == 0 {
		return []string{"none"}
	}
	return x
}

func sameConfig(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	x, e1 := strconv.ParseFloat(a, 64)
	y, e2 := strconv.ParseFloat(b, 64)
	return e1 == nil && e2 == nil && x == y
}

// settle is the scenario's settle, at most twice the report grace (past it, nothing the server does
// later changes what a check sees of the run).
func (w *extWorld) settle() time.Duration {
	d := w.sc.Settle
	if d <= 0 {
		d = 3 * time.Minute
	}
	return min(d, 2*w.grace)
}

// ---- client operations

func (w *extWorld) netUUIDs(names []string) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, n := range names {
		id, ok := w.netIDs[n]
		if !ok {
			return nil, fmt.Errorf("no network named %q", n)
		}
		out = append(out, id)
	}
	return out, nil
}

func (w *extWorld) createNetwork(client, name string, persistent bool) error {
	op := w.rec.BeginOp(client, "createNetwork", "", "", nil, name)
	id, err := w.cc.CreateNetwork(w.prefix+name, persistent)
	if err == nil {
		w.mu.Lock()
		w.netIDs[name] = id
		w.mu.Unlock()
	}
	err = w.redactErr(err)
	w.rec.EndOp(op, err)
	return err
}

// deleteNetwork is deleteNetwork of a network the run created; the run's cleanup finds it gone.
func (w *extWorld) deleteNetwork(client, name string) error {
	ns, err := w.netUUIDs([]string{name})
	if err != nil {
		return err
	}
	op := w.rec.BeginOp(client, "deleteNetwork", "", "", ns, name)
	job, err := w.cc.DeleteNetwork(ns[0])
	if err == nil {
		err = w.cc.Wait(job)
	}
	err = w.redactErr(err)
	w.rec.EndOp(op, err)
	return err
}

// deploy is deploy (start) or allocate (startvm=false).
func (w *extWorld) deploy(client, kind, name string, networks []string, host string, start bool) error {
	ns, err := w.netUUIDs(networks)
	if err != nil {
		return err
	}
	h := w.eo.hostName(host)
	op := w.rec.BeginOp(client, kind, "", h, ns, name)
	id, job, err := w.cc.Deploy(w.prefix+name, ns, h, start)
	if err == nil {
		w.mu.Lock()
		w.vmIDs[name] = id
		w.mu.Unlock()
		w.rec.SetOpVM(op, id, h)
		if v, err := w.cc.VM(id); err == nil {
			w.mu.Lock()
			w.vmInstance[id] = v.Instancename
			w.instances[v.Instancename] = true
			w.mu.Unlock()
		}
		err = w.cc.Wait(job)
	}
	err = w.redactErr(err)
	w.rec.EndOp(op, err)
	return err
}

func (w *extWorld) vmOp(client, kind, name, host string) error {
	w.mu.Lock()
	id, ok := w.vmIDs[name]
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("no VM named %q", name)
	}
	h := w.eo.hostName(host)
	op := w.rec.BeginOp(client, kind, id, h, nil, name)
	job, err := w.cc.VMOp(kind, id, h)
	if err == nil {
		err = w.cc.Wait(job)
	}
	err = w.redactErr(err)
	w.rec.EndOp(op, err)
	return err
}

// ---- steps

// extRun is an external CloudStack's World: operations through its API, conditions on what it
// lists, on the server's clock.
type extRun struct {
	w *extWorld
	*harness.RealTime
}

var _ harness.World = (*extRun)(nil)

func (s *extRun) Begin(res *harness.Result) {
	res.Started, res.External, res.Run, res.Rec = s.w.start, s.w.eo.API.URL, s.w.eo.Run, s.w.rec
}

func (s *extRun) Setup() error {
	w := s.w
	for _, n := range w.sc.Networks {
		if err := w.createNetwork("setup", n.Name, n.Persistent); err != nil {
			return fmt.Errorf("creating network %s: %v", n.Name, err)
		}
	}
	w.check()
	return nil
}

func (s *extRun) Settle() error {
	if !s.w.sleepWorld(s.w.settle()) {
		return s.Ctx().Err()
	}
	return nil
}

// Judge takes a last look, twice: a violation of the domains' truth counts once two looks see it.
func (s *extRun) Judge() error {
	s.StopBackground()
	s.w.check()
	s.w.check()
	return nil
}

func (s *extRun) Finish(res *harness.Result) {
	w, eo := s.w, s.w.eo
	w.finish(res)
	res.VirtualEnd = eo.Now().Sub(w.start)
	res.Notes = append(append(append([]string{
		"world: external CloudStack at " + eo.API.URL + " (run " + eo.Run + ", names " + w.prefix + "…); " + w.chosen,
		"seen from outside: records through list* commands, the hosts' domains through libvirt or a csconform hypervisor (read-only), every " + eo.Poll.String() + "; only what this run created is judged",
		"not checked here: network-lock (it needs each network write with its lock holder, which only the server's database knows); " +
			"the linearizability check sees the client operations, the observations and the guest addresses' holders as listed, not the server's own writes",
	}, append(w.noDomains(), w.unobservable()...)...), w.timeline...), res.Notes...)
}

// LinearBounds: no ghost-record bound from outside.
func (s *extRun) LinearBounds() (linear.Bounds, bool)  { return linear.Bounds{}, true }
func (s *extRun) VMState(name string) (vm.State, bool) { return s.w.vmState(name) }

// Close removes what the run created: what could not be is the result's Leftovers, or is added to
// the error; secrets are redacted from the error.
func (s *extRun) Close(res *harness.Result, err error) (*harness.Result, error) {
	w := s.w
	s.StopBackground()
	if err != nil && s.Ctx().Err() != nil {
		res, err = nil, fmt.Errorf("interrupted (%v); the run's faults were healed and what it created removed", s.Ctx().Err())
	}
	left := append(w.clearMocks(""), w.cleanup()...)
	if res != nil {
		res.Leftovers = left
		res.Notes = append(res.Notes, w.strayDomains()...)
	} else if len(left) > 0 {
		err = fmt.Errorf("%v\nthe cleanup left behind (remove by hand):\n  %s", err, strings.Join(left, "\n  "))
	}
	return res, w.redactErr(err)
}

func (s *extRun) Now() time.Time              { return s.w.eo.Now() }
func (s *extRun) Fault(st harness.Step) error { return s.w.fault(st) }
func (s *extRun) UntilPoll() time.Duration    { return s.w.eo.Poll / 4 }
func (s *extRun) UntilLimit() time.Duration   { return time.Hour }

// Wait sleeps d of the server's time.
func (s *extRun) Wait(d time.Duration) error {
	if !s.w.sleepWorld(d) {
		return s.Ctx().Err()
	}
	return nil
}

// SetConfig: Preflight refuses the step; the run changes no server's configuration.
func (s *extRun) SetConfig(string, string) error {
	return errors.New("setConfig is not available against an external CloudStack")
}

// The operations' failures are outcomes in the history, never errors of the run.
func (s *extRun) CreateNetwork(client, name string) error {
	_ = s.w.createNetwork(client, name, false)
	return nil
}

func (s *extRun) DeleteNetwork(client, name string) error {
	_ = s.w.deleteNetwork(client, name)
	return nil
}

func (s *extRun) Deploy(client string, st harness.Step) error {
	_ = s.w.deploy(client, "deploy", st.VM, st.Networks, st.Host, true)
	return nil
}

// Allocate is deployVirtualMachine with startvm=false.
func (s *extRun) Allocate(client string, st harness.Step) error {
	_ = s.w.deploy(client, "allocate", st.VM, st.Networks, st.Host, false)
	return nil
}

func (s *extRun) VMOp(client string, st harness.Step) error {
	_ = s.w.vmOp(client, st.Op, st.VM, st.Host)
	return nil
}

// Records look at the records anew; start-sent is a VM seen Starting (from outside, the
// StartCommand is not visible).
func (s *extRun) Records() harness.Records {
	s.w.check()
	return records{s.w}
}

type records struct{ w *extWorld }

func (r records) VMState(name string) (vm.State, bool) { return r.w.vmState(name) }

func (r records) NetworkState(name string) (network.State, bool) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	id, ok := w.netIDs[name]
	if ok && w.last != nil {
		for _, n := range w.last.Networks {
			if n.ID == id {
				return network.State(n.State), true
			}
		}
	}
	return "", false
}

func (r records) HostStatus(name string) (host.Status, bool) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.hostState[w.eo.hostName(name)]
	return host.Status(s), ok
}

func (r records) StartSent(name string) bool {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	id, ok := w.vmIDs[name]
	return ok && w.startSeen[id]
}

// fault applies a scenario fault through inject, recorded in the history as the other worlds do.
func (w *extWorld) fault(st harness.Step) error {
	if w.eo.Faults == FaultsSimulator {
		return w.simFault(st)
	}
	ef := externalFaults[st.Fault]
	in := w.eo.Inject
	w.mu.Lock()
	w.faultSeq++
	seq := w.faultSeq
	w.mu.Unlock()
	spec := inject.Spec{Fault: ef.inject, MgmtPort: in.MgmtPort, ID: w.eo.Run + "f" + strconv.Itoa(seq)}
	var targets []string
	kind, _ := faults.Lookup(st.Fault)
	switch st.Fault {
	case "agent-restart", "agent-kill":
		h := w.eo.hostName(st.Host)
		spec.Hosts, spec.Duration = []string{in.target(h)}, cmp.Or(st.Duration, 10*time.Second)
		targets = []string{"host:" + h}
	case "disconnect":
		h := w.eo.hostName(st.Host)
		spec.Hosts, spec.Duration = []string{in.target(h)}, st.Duration
		targets = []string{"host:" + h}
	case "crash":
		w.mu.Lock()
		id := w.vmIDs[st.VM]
		inst := w.vmInstance[id]
		w.mu.Unlock()
		h, dom, err := w.domainOf(inst)
		if err != nil {
			return fmt.Errorf("crash of %s: %v", st.VM, err)
		}
		spec.Hosts, spec.VM = []string{in.target(h)}, dom
		targets = []string{"vm:" + id}
	}
	plan, err := inject.Build(spec)
	if err != nil {
		return fmt.Errorf("fault %s: %v", st.Fault, err)
	}
	w.mu.Lock()
	if in.Log == nil && in.OpenLog != nil {
		in.Log, err = in.OpenLog()
	}
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("fault %s: %v", st.Fault, err)
	}
	i := w.rec.BeginFault(st.Fault, kind.Disruptive, fmt.Sprintf("through csconform inject %s on %s", plan.Kind.Name, strings.Join(plan.Targets, ",")), targets...)
	w.note("fault %s begins: inject %s on %s", st.Fault, plan.Kind.Name, strings.Join(plan.Targets, ","))
	injector := &inject.Injector{Exec: in.Exec, Policy: in.Policy, Log: in.Log, Out: in.Out, Yes: in.Yes,
		After: func(d time.Duration) <-chan time.Time { return time.After(time.Duration(float64(d) / w.eo.Speed)) }}
	err = injector.Run(w.eo.Ctx, plan)
	// a host fault lasts until the host is Up again: until then it explains a failed start
	if err == nil && kind.Disruptive && slices.ContainsFunc(targets, func(t string) bool { return strings.HasPrefix(t, "host:") }) {
		deadline := w.eo.Now().Add(5 * time.Minute)
		for !w.hostIs(strings.TrimPrefix(targets[0], "host:"), "Up") && w.eo.Now().Before(deadline) && harness.SleepCtx(w.eo.Ctx, w.eo.Poll/4) {
			w.check()
		}
	}
	detail := "healed"
	if err != nil {
		detail = "failed: " + err.Error()
	}
	w.rec.EndFault(i, detail)
	w.note("fault %s ends: %s", st.Fault, detail)
	return err
}

// domainOf finds the host running an instance's domain (and the domain's libvirt name).
func (w *extWorld) domainOf(instance string) (string, string, error) {
	if instance == "" {
		return "", "", errors.New("its instance name is not known")
	}
	for _, h := range w.hosts {
		hd, err := h.Domains()
		if err != nil {
			return "", "", err
		}
		prefix := strings.ReplaceAll(w.eo.DomainPrefix, "{host}", hd.Host)
		for _, d := range hd.Domains {
			if d.Running && (d.Instance == instance || d.Instance == "" && d.Name == prefix+instance) {
				return hd.Host, d.Name, nil
			}
		}
	}
	return "", "", fmt.Errorf("no host runs a domain for %s", instance)
}

// finish fills the table from the history and the last look.
func (w *extWorld) finish(res *harness.Result) {
	harness.FillOutsideTable(res, w.rec, w.vmState)
	w.mu.Lock()
	res.Violations = append([]harness.Violation(nil), w.viols...)
	w.mu.Unlock()
	harness.SortViolations(res.Violations)
}
