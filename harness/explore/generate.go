// Package explore finds orchestration races from random workloads: rapid draws a program (a topology,
// client operations, faults and waits), the simulator runs it, and both detectors — the invariants
// after every step and the linearizability of every object's history — judge it. A failing program
// shrinks to a short counterexample that replays from its seed and saves as a scenario file.
package explore

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/world/container"
	"github.com/csconform/csconform/impl"
	"pgregory.net/rapid"
)

// Limits of a generated program.
const (
	maxHosts    = 2
	maxNetworks = 2
	maxActions  = 8
)

// gen is the generator's view of the program so far: what exists to act on.
type gen struct {
	t     *rapid.T
	sc    *harness.Scenario
	vms   []string
	where map[string]string   // vm -> host
	nets  map[string][]string // vm -> the networks of its NICs (the VMs a retire expunges)
	// deleted are the networks a retire deleted: later actions draw among the others
	deleted map[string]bool
	n       int
	reach   Reach
	// classic: the generator before issue 11 (one network per VM, every action kind, no config)
	classic bool
	// kinds and faults are what this program may draw (swarm testing); thresholds, its waits past
	// the drawn configuration's thresholds
	kinds      []kind
	ops        []string
	faults     []string
	thresholds []time.Duration
	// long are the waits past the drawn thresholds that take hours; idled, the idle time drawn so far
	long  []time.Duration
	idled time.Duration
	// grace is the invariants' report grace at the drawn configuration (harness.ReportGrace)
	grace time.Duration
}

// Program draws a program and says how many actions it drew (an action is one operation, fault or
// wait, or one of the weighted interleavings, which takes a few steps).
//
// Program draws a program. Actions are weighted towards the interleavings that matter: a deploy into a
// network older than job.expire.minutes (the orphaned-network cleanup), a bystander's crash while a
// start is in flight with a delayed out-of-band report (stale power report), a destroy while the host's
// agent is away (forced release); the rest are plain operations, single faults and waits.
func Program(t *rapid.T) (*harness.Scenario, int) { return ProgramFor(t, Everything) }

// Reach is what a world can do to a program: ReachOf reads it from the world's declared
// capabilities (harness.Capabilities), so the generator draws only what the world runs.
type Reach struct {
	AgedNetworks bool
	// HA: the world deploys HA-enabled VMs (the simulator; the container world's deploy has no HA
	// flag, so its programs draw none)
	HA bool
	// Peers: programs may run two management servers on one database and stop the second
	// (peer-stop); the simulator only (Options.Peers; explore --peers, on by default)
	Peers bool
	// Faults lists the faults the world can inject; nil: all of them.
	Faults map[string]bool
	// Migrate, Recover: the world runs the migrate and recover ops (issue 33; not libvirt's or the
	// containers')
	Migrate, Recover bool
	// ServerLog: the world's history has the server's log lines, so a step can wait for one (until:
	// log; cutAtConnect times its link cut by the connect's line)
	ServerLog bool
	// DeleteNetwork: the world runs deleteNetwork (programs draw retire-network)
	DeleteNetwork bool
}

// Everything is the simulator's reach (Peers as Options.Peers says).
var Everything = ReachOf(harness.SimCapabilities, false)

// ContainerReach is what the container world (world/container) accepts, less host-unreachable: the generator
// holds a host unreachable 90 s to 10 min past the ping timeout, which in real time would make one
// program last tens of minutes.
var ContainerReach = ReachOf(container.Capabilities, false, "host-unreachable")

// ReachOf is the reach of a world with capabilities c: peers as asked (if c has them), and every fault
// c can apply but those left out.
func ReachOf(c harness.Capabilities, peers bool, leftOut ...string) Reach {
	r := Reach{AgedNetworks: c.Can(harness.AgedNetworks), HA: c.Can(harness.HAVMs), Peers: peers && c.Can(harness.PeerServers),
		Migrate: c.Can(harness.MigrateOp), Recover: c.Can(harness.RecoverOp), ServerLog: c.Can(harness.ServerLog),
		DeleteNetwork: c.Can(harness.DeleteNetworkOp)}
	can := c.Faults()
	if len(can) == len(faults.Kinds) && len(leftOut) == 0 {
		return r // nil: every fault, in the generator's own lists' order
	}
	r.Faults = map[string]bool{}
	for _, f := range can {
		if !slices.Contains(leftOut, f) {
			r.Faults[f] = true
		}
	}
	return r
}

func (r Reach) only(kinds []string) []string {
	if r.Faults == nil {
		return kinds // the same list, so the simulator's programs do not change with a seed
	}
	var out []string
	for _, k := range kinds {
		if r.Faults[k] {
			out = append(out, k)
		}
	}
	return out
}

// programSettle is how long a program runs on after its last action: longer than the ghost-record
// bound at CloudStack's ping.interval (harness.GhostBound: 5 minutes), so a record left Running
// without a domain by the last action is judged too.
const programSettle = 6 * time.Minute

// ClassicProgramFor draws a program as explore did before swarm testing, drawn configuration and
// multi-NIC VMs: one shape of program, kept for csconform bench's comparison (Options.Classic).
func ClassicProgramFor(t *rapid.T, r Reach) (*harness.Scenario, int) {
	g := &gen{t: t, where: map[string]string{}, nets: map[string][]string{}, reach: r, classic: true}
	seed := rapid.Uint64Range(1, 1<<32).Draw(t, "seed")
	g.sc = &harness.Scenario{Name: fmt.Sprintf("explore-%d", seed), Title: "a program found by csconform explore",
		Seed: seed, Settle: programSettle, Lenient: true}
	for i := range rapid.IntRange(1, maxHosts).Draw(t, "hosts") {
		g.sc.Hosts = append(g.sc.Hosts, fmt.Sprintf("h%d", i+1))
	}
	if rapid.Bool().Draw(t, "vm.destroy.forcestop") {
		g.sc.Config = map[string]string{"vm.destroy.forcestop": "true"}
	}
	ages := []time.Duration{0, 30 * time.Minute, 48 * time.Hour}
	if !r.AgedNetworks {
		ages = ages[:1]
	}
	for i := range rapid.IntRange(1, maxNetworks).Draw(t, "networks") {
		g.sc.Networks = append(g.sc.Networks, harness.NetworkDef{Name: fmt.Sprintf("net%d", i+1),
			Age: rapid.SampledFrom(ages).Draw(t, "age"), Persistent: rapid.IntRange(0, 9).Draw(t, "persistent") == 0})
	}
	// Actions as a slice, each drawn from its own stream: the shrinker then deletes whole actions,
	// which is what makes a counterexample short. An action still sees what the ones before it made.
	act := rapid.Custom(func(t *rapid.T) bool {
		outer := g.t
		g.t = t
		defer func() { g.t = outer }()
		if g.classic {
			g.classicAction()
		} else {
			g.action()
		}
		return true
	})
	n := len(rapid.SliceOfN(act, 1, maxActions).Draw(t, "actions"))
	return g.sc, n
}

func (g *gen) step(s harness.Step) { g.sc.Steps = append(g.sc.Steps, s) }

func (g *gen) host() string { return rapid.SampledFrom(g.sc.Hosts).Draw(g.t, "host") }

func (g *gen) network() string {
	if len(g.deleted) > 0 {
		var live []string
		for _, n := range g.sc.Networks {
			if !g.deleted[n.Name] {
				live = append(live, n.Name)
			}
		}
		if len(live) > 0 {
			return live[rapid.IntRange(0, len(live)-1).Draw(g.t, "network")]
		}
	}
	return g.sc.Networks[rapid.IntRange(0, len(g.sc.Networks)-1).Draw(g.t, "network")].Name
}

// deploy adds a deployVirtualMachine of a new VM on host h: on one network, or (not classic) with
// NICs on several.
func (g *gen) deploy(h string, async bool) string {
	g.n++
	name := fmt.Sprintf("vm%d", g.n)
	nets := []string{g.network()}
	if !g.classic {
		for _, n := range g.sc.Networks {
			// false (one NIC) is where a shrink goes
			if n.Name != nets[0] && rapid.IntRange(0, 3).Draw(g.t, "nic on "+n.Name) == 3 {
				nets = append(nets, n.Name)
			}
		}
	}
	return g.deployOn(h, name, nets, async)
}

// deployOn adds the deploy of VM name on host h with NICs on nets.
func (g *gen) deployOn(h, name string, nets []string, async bool) string {
	// an HA-enabled VM now and then (false is where a shrink goes): HA restarts it when its host is
	// judged Down, and power sync hands its unexplained power-off to HA
	ha := !g.classic && g.reach.HA && rapid.IntRange(0, 3).Draw(g.t, "ha") == 3
	g.step(harness.Step{Op: "deploy", VM: name, Networks: nets, Host: h, Async: async, HA: ha})
	g.vms = append(g.vms, name)
	g.where[name] = h
	g.nets[name] = nets
	return name
}

// someVM is an existing VM, or a new one deployed for the purpose.
func (g *gen) someVM() string {
	if len(g.vms) == 0 {
		return g.deploy(g.host(), false)
	}
	return rapid.SampledFrom(g.vms).Draw(g.t, "vm")
}

// staleness is how late an out-of-band report is processed: 0.1–3 s. It shrinks towards 3 s, the
// delay most likely to span a start, so that a shrunk counterexample needs no filler to line it up.
func (g *gen) staleness() time.Duration {
	return time.Duration(30-rapid.IntRange(0, 29).Draw(g.t, "staleness")) * 100 * time.Millisecond
}

func (g *gen) wait(label string, max time.Duration) time.Duration {
	return time.Duration(rapid.Int64Range(0, int64(max/time.Second)).Draw(g.t, label)) * time.Second
}

var vmOps = []string{"start", "startNoRetry", "stop", "forceStop", "destroy", "destroyExpunge", "expunge"}

// ops are the VM operations the current generator draws: vmOps, then migrate and recover where the
// world runs them (the classic generator draws vmOps only).
func (r Reach) ops() []string {
	ops := slices.Clone(vmOps)
	if r.Migrate {
		ops = append(ops, "migrate")
	}
	if r.Recover {
		ops = append(ops, "recover")
	}
	return ops
}

var soloFaults = []string{"crash", "guest-shutdown", "agent-restart", "agent-kill", "disconnect", "ms-restart", "slow-router-boot", "stale-report"}

// hostFaults are the host states of the investigation and HA (issue 12) and a hypervisor that fails
// its starts (issue 45: the start's failure paths), drawn by the current generator only (the classic one's programs stay as they were). host-remove is not among them: a
// removed host stays gone, and the programs' later deploys onto it would fail for a reason the
// detectors do not know; it is drawn only after a program's last action (thenRemoved).
var hostFaults = []string{"host-power-off", "host-unreachable", "heartbeat-fail", "start-fails"}

// removable are the faults on a host that, as a program's last step, a forced removal of the host
// may follow (thenRemoved).
var removable = []string{"disconnect", "agent-kill", "agent-restart", "host-power-off", "host-unreachable", "heartbeat-fail"}

func (g *gen) classicAction() {
	switch w := rapid.IntRange(0, 99).Draw(g.t, "action"); {
	case w < 20: // a deploy
		g.deploy(g.host(), rapid.Bool().Draw(g.t, "async"))
	case w < 35: // an operation on a VM
		v := g.someVM()
		g.step(harness.Step{Wait: g.wait("wait", 30*time.Second), Op: rapid.SampledFrom(vmOps).Draw(g.t, "op"), VM: v,
			Async: rapid.Bool().Draw(g.t, "async")})
	case w < 50: // a bystander on the same host crashes while a start is in flight
		h := g.host()
		bystander := g.deploy(h, false)
		g.step(harness.Step{Fault: "stale-report", Host: h, Duration: g.staleness()})
		starting := g.deploy(h, true)
		kind := rapid.SampledFrom(g.reach.only([]string{"crash", "guest-shutdown"})).Draw(g.t, "fault")
		g.step(harness.Step{Until: "start-sent", VM: starting})
		g.step(harness.Step{Fault: kind, VM: bystander, Detail: map[string]string{"crash": "CRASHED"}[kind]})
	case w < 70: // the host's agent goes away while a VM on it is stopped or destroyed (or started)
		g.agentAway(g.reach.only([]string{"agent-restart", "disconnect", "agent-kill", "ms-restart"}))
	case w < 90: // a fault on its own
		g.fault(rapid.SampledFrom(g.reach.only(soloFaults)).Draw(g.t, "fault"))
	default: // time passes: GC ticks, pings, network GC
		g.step(harness.Step{Wait: time.Duration(rapid.IntRange(1, 20).Draw(g.t, "minutes")) * time.Minute})
	}
}

func (g *gen) fault(kind string) {
	if kind == "disconnect" && g.cutAtConnect() {
		return
	}
	s := harness.Step{Fault: kind, Async: true}
	switch kind {
	case "crash", "guest-shutdown":
		s.VM, s.Async = g.someVM(), false
	case "stale-report":
		s.Host, s.Async = g.host(), false
		s.Duration = g.staleness()
	case "slow-router-boot":
		s.Async = false
		s.Duration = time.Duration(rapid.IntRange(36, 120).Draw(g.t, "boot")) * time.Second
	case "ms-restart":
		s.Duration = time.Duration(rapid.IntRange(5, 60).Draw(g.t, "down")) * time.Second
	case "peer-stop":
		// gone past the 150 s heartbeat threshold (judged gone, its hosts and jobs taken over), or back
		// before anyone noticed
		s.Server = "ms2"
		s.Duration = rapid.SampledFrom([]time.Duration{10 * time.Minute, time.Minute, 30 * time.Minute}).Draw(g.t, "for")
	case "host-power-off", "host-unreachable", "heartbeat-fail", "start-fails":
		// long enough for the ping timeout and the investigation (each fault's default first), or
		// shorter than them; a hypervisor failing its starts for the default, for one start's
		// attempts, or for a VM start and its retries and HA's
		s.Host = g.host()
		s.Duration = rapid.SampledFrom(map[string][]time.Duration{
			"host-power-off":   {30 * time.Minute, 2 * time.Minute, 10 * time.Minute},
			"host-unreachable": {5 * time.Minute, 90 * time.Second, 10 * time.Minute},
			"heartbeat-fail":   {10 * time.Minute, 3 * time.Minute, 30 * time.Minute},
			"start-fails":      {5 * time.Minute, 30 * time.Second, 20 * time.Minute},
		}[kind]).Draw(g.t, "for")
	default:
		s.Host = g.host()
		s.Duration = time.Duration(rapid.IntRange(5, 60).Draw(g.t, "down")) * time.Second
	}
	g.step(s)
}

// kind is a kind of action; each program draws the subset it uses (swarm testing: a program without
// deploys' noise or without faults reaches what an even mix of everything rarely does).
type kind int

const (
	kindDeploy       kind = iota // a deploy, with NICs on one network or several
	kindOp                       // an operation on a VM
	kindStaleStart               // a bystander crashes while a start is in flight, its report late (D2)
	kindAgentAway                // the host's agent goes away around a stop or destroy (D3)
	kindRestartStart             // the management server restarts while a start is in flight (C2)
	kindFault                    // a fault on its own
	kindWait                     // time passes, at times past a drawn threshold
	kindOutageDeploy             // deploys onto a host cut off past the ping timeout, then one more into their networks (C5)
	kindRetire                   // a network's VMs expunged and the network deleted, now and then beside a deploy into it
	numKinds
)

var kindNames = [numKinds]string{"deploy", "operation", "stale-start", "agent-away", "restart-start", "fault", "wait", "outage-deploy", "retire-network"}

// kindWeights are each kind's share of the draws among the kinds a program has.
var kindWeights = [numKinds]int{15, 15, 18, 20, 10, 15, 10, 6, 5}

// configDraws are the settings a program draws on their own: the thresholds the paths read, each
// within impl's range for the key, CloudStack's default first (where a shrink goes). Short values make
// the orphaned-network cleanup (job.expire.minutes), the network GC (network.gc.interval,
// network.lock.timeout), power sync's view of a host (ping.interval, ping.timeout, alert.wait), the
// job GC's expiry, VMMI's TransitionTask (vm.op.cleanup.interval, which acts on VMs in transition
// not updated for `wait`), its disconnected-host scan (vm.op.wait.interval) and the stall scan on each
// ping (vm.job.report.interval) act within a program's minutes or hours. router.ready.timeout stays
// at its default. job.expire.minutes stays at 10 or more: the job GC expunges unfinished jobs older
// than it (AsyncJobDaoImpl.getExpiredUnfinishedJobs, as 4.22 does), so a value shorter than a start
// expunges the start's own work job mid-flight — a real but configuration-made family that needs its
// own look. Networks are drawn 30 minutes or 48 hours old, so the orphaned-network cleanup still acts
// at 10 and 30. The keys that depend on others (relatedDraws) are drawn after these.
var configDraws = []struct {
	key    string
	values []string
}{
	{"job.expire.minutes", []string{"1440", "10", "30", "60", "120", "360"}},
	{"network.gc.interval", []string{"600", "10", "30", "60", "120"}},
	{"network.lock.timeout", []string{"600", "60", "120"}},
	{"ping.interval", []string{"60", "20", "30"}},
	{"ping.timeout", []string{"2.5", "1.5", "2", "4"}},
	{"alert.wait", []string{"1800", "60", "300"}},
	{"wait", []string{"1800", "300", "600", "900"}},
	{"vm.op.cleanup.interval", []string{"86400", "600", "1800", "3600", "21600"}},
	{"vm.op.wait.interval", []string{"120", "30", "60", "600"}},
	{"vm.job.report.interval", []string{"60", "10", "30", "120"}},
}

// relatedDraws are the keys a program draws as a multiple of another, so that a drawn configuration
// keeps CloudStack's relations between them (TestDrawnConfigsKeepTheRelations checks every one):
//
//   - ping.timeout is a multiplier of ping.interval, never below 1 (a host is behind on ping after
//     ping.interval × ping.timeout: 150 s at the defaults); its range (1..100) says so, and the values
//     drawn are 1.5 to 4.
//   - wait ≥ ping.interval × ping.timeout: a command outlives the ping timeout, so a host that went
//     away is suspected (and investigated) before the commands sent to it time out (1800 s against
//     150 s at the defaults). The values drawn hold it by construction: the longest ping timeout
//     drawn is 60 s × 4 = 240 s, the shortest wait 300 s.
//   - job.cancel.threshold.minutes ≥ 2 × wait: the job GC cancels a queue item in process longer
//     than the threshold, and an item waits on up to two commands of `wait` (a StartCommand, then
//     its cleanup's StopCommand): 60 minutes = 2 × 1800 s at the defaults. Drawn as 2 × wait (the
//     default relation) or 4 × wait.
//   - network.gc.wait ≥ network.gc.interval: the GC shuts down a network seen free on two of its
//     ticks network.gc.wait apart, so a shorter wait is the interval anyway (600 = 600 at the
//     defaults). Drawn as 1 × (the default relation), 2 × or 4 × the interval.
//   - vm.op.wait.interval ≤ vm.op.cancel.interval (120 s against 3600 s): checkWorkItems waits in
//     steps of the one until the other; vm.op.cancel.interval is not drawn and every value drawn is
//     below it.
//
// Not relations: vm.op.cleanup.interval (TransitionTask's period) and vm.job.report.interval (the
// stall scan's age, as milliseconds, as the Java reads it) are independent of the others, and
// job.expire.minutes is not tied to job.cancel.threshold.minutes (a job may expire before the GC
// would cancel its item: the 4.22 GC does both, whichever comes first).
var relatedDraws = []struct {
	key, base string
	factors   []float64 // the key is base × factor (base in the key's unit), the default relation first
	unit      float64   // seconds per unit of the key over the base's (60: the key in minutes, its base in seconds)
}{
	{"job.cancel.threshold.minutes", "wait", []float64{2, 4}, 60},
	{"network.gc.wait", "network.gc.interval", []float64{1, 2, 4}, 1},
}

// drawConfig draws a tuned configuration into cfg: each key of configDraws, then each of relatedDraws
// from the value its base was drawn with (or the base's default). Only values other than the default
// are put in cfg.
func drawConfig(t *rapid.T, cfg map[string]string) {
	for _, d := range configDraws {
		if v := rapid.SampledFrom(d.values).Draw(t, d.key); v != d.values[0] {
			cfg[d.key] = v
		}
	}
	for _, d := range relatedDraws {
		base := cfg[d.base]
		if base == "" {
			k, _ := impl.LookupConfigKey(d.base)
			base = k.Default
		}
		b, err := strconv.ParseFloat(base, 64)
		if err != nil {
			panic(err)
		}
		v := strconv.FormatFloat(math.Ceil(b*rapid.SampledFrom(d.factors).Draw(t, d.key)/d.unit), 'f', -1, 64)
		if k, _ := impl.LookupConfigKey(d.key); v != k.Default {
			cfg[d.key] = v
		}
	}
}

// newMaxNetworks is how many networks a program may have (VMs with NICs on several of them), and
// newMaxHosts how many hosts (one cluster: with three, a host's investigation has two neighbours and
// HA restarts a VM on a host other than the one that went away and the one its router runs on).
const (
	newMaxNetworks = 3
	newMaxHosts    = 3
)

// ProgramFor draws a program a world with reach r can run: its hosts, its configuration (each key
// CloudStack's default or a short value), its networks, the kinds of action and of fault it uses
// (a swarm: all of them, or a random subset), then its actions from those.
func ProgramFor(t *rapid.T, r Reach) (*harness.Scenario, int) {
	g := &gen{t: t, where: map[string]string{}, nets: map[string][]string{}, reach: r}
	seed := rapid.Uint64Range(1, 1<<32).Draw(t, "seed")
	g.sc = &harness.Scenario{Name: fmt.Sprintf("explore-%d", seed), Title: "a program found by csconform explore",
		Seed: seed, Settle: programSettle, Lenient: true}
	for i := range rapid.IntRange(1, newMaxHosts).Draw(t, "hosts") {
		g.sc.Hosts = append(g.sc.Hosts, fmt.Sprintf("h%d", i+1))
	}
	// now and then a second management server (the hosts split between the two, the API calls
	// alternate): the peer's cleanups race the other's work, and a peer can die (peer-stop)
	if r.Peers && len(g.sc.Hosts) > 1 && rapid.IntRange(0, 3).Draw(t, "servers") == 3 {
		g.sc.ManagementServers = 2
	}
	cfg := map[string]string{}
	if rapid.Bool().Draw(t, "vm.destroy.forcestop") {
		cfg["vm.destroy.forcestop"] = "true"
	}
	if rapid.Bool().Draw(t, "tuned") {
		drawConfig(t, cfg)
	}
	if len(cfg) > 0 {
		g.sc.Config = cfg
	}
	c, err := impl.NewConfig(cfg)
	if err != nil {
		panic(err) // configDraws holds values in range
	}
	g.thresholds, g.long = thresholds(c)
	g.grace = harness.ReportGrace(c)
	ages := []time.Duration{0, 30 * time.Minute, 48 * time.Hour}
	if !r.AgedNetworks {
		ages = ages[:1]
	}
	nets := rapid.IntRange(1, maxNetworks).Draw(t, "networks")
	if rapid.IntRange(0, 3).Draw(t, "one more network") == 3 {
		nets = newMaxNetworks // a third network now and then: each adds a router to boot
	}
	for i := range nets {
		g.sc.Networks = append(g.sc.Networks, harness.NetworkDef{Name: fmt.Sprintf("net%d", i+1),
			Age: rapid.SampledFrom(ages).Draw(t, "age"), Persistent: rapid.IntRange(0, 9).Draw(t, "persistent") == 0})
	}
	g.swarm()
	g.layout()
	act := rapid.Custom(func(t *rapid.T) bool {
		outer := g.t
		g.t = t
		defer func() { g.t = outer }()
		g.action()
		return true
	})
	n := len(rapid.SliceOfN(act, 1, maxActions).Draw(t, "actions"))
	if g.thenRemoved(c) {
		n++
	}
	return g.sc, n
}

// thresholds are the waits that carry a program past what its configuration makes happen: the
// orphaned-network cleanup's age and the job GC's expiry (job.expire.minutes), the job GC's
// cancellation of a blocked queue item (job.cancel.threshold.minutes), the network GC's two
// sightings, a host's way to Alert (the ping timeout, then alert.wait) and VMMI's TransitionTask
// (vm.op.cleanup.interval; it acts on VMs in transition older than `wait`, so at least that long).
// short are those of at most 20 minutes, as long as a plain wait; long those of up to 7 hours, the
// idle stretches that make a program span hours (simulated time is cheap, but not free: an idle hour
// of three hosts at the default ping.interval costs about one case's run).
func thresholds(c *impl.Config) (short, long []time.Duration) {
	for _, d := range []time.Duration{
		time.Duration(c.Int("job.expire.minutes"))*time.Minute + impl.GCInterval + time.Minute,
		time.Duration(c.Int("job.cancel.threshold.minutes"))*time.Minute + impl.GCInterval + time.Minute,
		2*(c.Seconds("network.gc.interval")+c.Seconds("network.gc.wait")) + time.Minute,
		c.PingTimeout() + c.Seconds("alert.wait") + time.Minute,
		max(c.Seconds("vm.op.cleanup.interval"), c.Seconds("wait")) + impl.GCInterval + time.Minute,
	} {
		switch {
		case d <= 20*time.Minute:
			short = append(short, d)
		case d <= maxIdle:
			long = append(long, d)
		}
	}
	return short, long
}

// maxIdle is the longest idle wait a program draws, and idleBudget the most idle time one program
// spends in such waits (a run is cut at 24 hours of simulated time, harness/clusterrun.go).
const (
	maxIdle    = 7 * time.Hour
	idleBudget = 16 * time.Hour
)

// idle draws a long wait: past one of the long thresholds, or (with none) an hour or three of
// nothing, so that periodic tasks, pings and power reports run on what the program left behind. It
// says false if the program's idle budget is spent.
func (g *gen) idle() bool {
	ds := g.long
	if len(ds) == 0 {
		ds = []time.Duration{time.Hour, 3 * time.Hour}
	}
	d := rapid.SampledFrom(ds).Draw(g.t, "idle")
	if g.idled+d > idleBudget {
		return false
	}
	g.idled += d
	g.step(harness.Step{Wait: d})
	return true
}

// layout, now and then, places a program's first VMs the way the HA paths care about: a VM alone on
// its host (HA-enabled where the world has HA) whose network's router runs on another host, the
// router's host given a VM of its own first (a network's router starts on the host of the VM whose
// start implements it). The actions that follow act on these as on any other VM; with three hosts
// the third is the neighbour that answers the investigation and where HA restarts the VM. A shrink
// drops it (false first).
func (g *gen) layout() {
	if len(g.sc.Hosts) < 2 || rapid.IntRange(0, 2).Draw(g.t, "layout") < 2 {
		return
	}
	i := rapid.IntRange(0, len(g.sc.Hosts)-1).Draw(g.t, "router host")
	j := (i + 1 + rapid.IntRange(0, len(g.sc.Hosts)-2).Draw(g.t, "alone on")) % len(g.sc.Hosts)
	net := g.network()
	g.n++
	router := fmt.Sprintf("vm%d", g.n)
	g.step(harness.Step{Op: "deploy", VM: router, Networks: []string{net}, Host: g.sc.Hosts[i]})
	g.vms = append(g.vms, router)
	g.where[router] = g.sc.Hosts[i]
	g.nets[router] = []string{net}
	g.n++
	alone := fmt.Sprintf("vm%d", g.n)
	g.step(harness.Step{Op: "deploy", VM: alone, Networks: []string{net}, Host: g.sc.Hosts[j], HA: g.reach.HA})
	g.vms = append(g.vms, alone)
	g.where[alone] = g.sc.Hosts[j]
	g.nets[alone] = []string{net}
}

// swarm draws the kinds of action, of operation and of fault the program uses: every one (where a
// shrink goes), or each with even odds. A kind whose faults are all left out is left out too;
// deploys always remain, and so does some operation.
func (g *gen) swarm() {
	all := g.reach.only(append(slices.Clone(soloFaults), hostFaults...))
	if g.sc.ManagementServers > 1 {
		all = append(all, "peer-stop")
	}
	swarm := rapid.Bool().Draw(g.t, "swarm")
	for _, f := range all {
		if !swarm || !rapid.Bool().Draw(g.t, "no "+f) {
			g.faults = append(g.faults, f)
		}
	}
	for _, op := range g.reach.ops() {
		if !swarm || !rapid.Bool().Draw(g.t, "no "+op) {
			g.ops = append(g.ops, op)
		}
	}
	if len(g.ops) == 0 {
		g.ops = vmOps
	}
	for k := range numKinds {
		if k != kindDeploy && swarm && rapid.Bool().Draw(g.t, "no "+kindNames[k]) {
			continue
		}
		if k != kindDeploy && len(g.faultsOf(k)) == 0 {
			continue
		}
		g.kinds = append(g.kinds, k)
	}
}

// faultsOf are the faults an action of kind k may inject (nil: it needs none).
func (g *gen) faultsOf(k kind) []string {
	pick := func(kinds ...string) []string {
		var out []string
		for _, f := range kinds {
			if slices.Contains(g.faults, f) {
				out = append(out, f)
			}
		}
		return out
	}
	switch k {
	case kindStaleStart:
		if !slices.Contains(g.faults, "stale-report") {
			return nil
		}
		return pick("crash", "guest-shutdown")
	case kindAgentAway:
		return pick("agent-restart", "disconnect", "agent-kill", "ms-restart", "host-power-off", "host-unreachable", "peer-stop")
	case kindRestartStart:
		return pick("ms-restart", "peer-stop")
	case kindFault:
		return g.faults
	case kindOutageDeploy:
		return pick("disconnect")
	case kindRetire:
		if !g.reach.DeleteNetwork {
			return nil
		}
	}
	return []string{""}
}

func (g *gen) action() {
	total := 0
	for _, k := range g.kinds {
		total += kindWeights[k]
	}
	w := rapid.IntRange(0, total-1).Draw(g.t, "action")
	k := g.kinds[len(g.kinds)-1]
	for _, c := range g.kinds {
		if w < kindWeights[c] {
			k = c
			break
		}
		w -= kindWeights[c]
	}
	switch k {
	case kindDeploy:
		g.deploy(g.host(), rapid.Bool().Draw(g.t, "async"))
	case kindOp:
		v := g.someVM()
		st := harness.Step{Wait: g.wait("wait", 30*time.Second), Op: rapid.SampledFrom(g.ops).Draw(g.t, "op"), VM: v,
			Async: rapid.Bool().Draw(g.t, "async")}
		if st.Op == "migrate" {
			st.Host = g.host() // the destination: any host, the VM's own one refused as CloudStack does
		}
		g.step(st)
	case kindStaleStart:
		g.staleStart(g.faultsOf(k))
	case kindAgentAway:
		g.agentAway(g.faultsOf(k))
	case kindRestartStart:
		g.restartStart(g.faultsOf(k))
	case kindFault:
		g.fault(rapid.SampledFrom(g.faults).Draw(g.t, "fault"))
	case kindOutageDeploy:
		g.outageDeploy()
	case kindRetire:
		g.retire()
	case kindWait:
		// now and then an idle stretch of hours (a shrink drops it: the last of the choices)
		if rapid.IntRange(0, 5).Draw(g.t, "idle") == 5 && g.idle() {
			return
		}
		if len(g.thresholds) == 0 || rapid.IntRange(0, 2).Draw(g.t, "past a threshold") < 2 {
			g.step(harness.Step{Wait: time.Duration(rapid.IntRange(1, 20).Draw(g.t, "minutes")) * time.Minute})
		} else {
			g.step(harness.Step{Wait: rapid.SampledFrom(g.thresholds).Draw(g.t, "threshold")})
		}
	}
}

// staleStart: a bystander on the same host crashes while a start is in flight, and the host's report
// of that moment is processed late (seed 001, D2).
func (g *gen) staleStart(kinds []string) {
	h := g.host()
	bystander := g.deploy(h, false)
	g.step(harness.Step{Fault: "stale-report", Host: h, Duration: g.staleness()})
	starting := g.deploy(h, true)
	kind := rapid.SampledFrom(kinds).Draw(g.t, "fault")
	g.step(harness.Step{Until: "start-sent", VM: starting})
	g.step(harness.Step{Fault: kind, VM: bystander, Detail: map[string]string{"crash": "CRASHED"}[kind]})
}

// agentAway: the host's agent (or the server) goes away while a VM on it is stopped or destroyed, or
// started (seed 002, D3).
func (g *gen) agentAway(kinds []string) {
	var v string
	if rapid.Bool().Draw(g.t, "during a start") {
		v = g.deploy(g.host(), true)
		g.step(harness.Step{Until: "start-sent", VM: v})
	} else {
		v = g.someVM()
	}
	h := g.where[v]
	kind := rapid.SampledFrom(kinds).Draw(g.t, "fault")
	down := time.Duration(rapid.SampledFrom([]int{5, 10, 20, 60, 200, 200, 200}).Draw(g.t, "down")) * time.Second
	fault := harness.Step{Fault: kind, Host: h, Duration: down, Async: true}
	switch kind {
	case "ms-restart":
		fault.Host = ""
	case "peer-stop":
		fault.Host, fault.Server = "", "ms2"
	}
	op := harness.Step{Op: rapid.SampledFrom([]string{"destroyExpunge", "destroy", "forceStop", "stop"}).Draw(g.t, "op"), VM: v}
	if rapid.IntRange(0, 2).Draw(g.t, "operation first") > 0 {
		op.Async = true
		fault.Wait = time.Duration(rapid.IntRange(0, 40).Draw(g.t, "tenths")) * 100 * time.Millisecond
		g.step(op)
		g.step(fault)
	} else {
		op.Wait = g.wait("wait", 10*time.Second) + time.Second
		g.step(fault)
		g.step(op)
	}
	g.comeBack(v)
}

// restartStart: the management server restarts with a start in flight — of a new VM, or of one that
// ran and was stopped, so that its power state is tracked from the earlier run (cleanupLeftOverJobs,
// C2). A VM that ran has sent a StartCommand before, which start-sent would take for this one: the
// restart comes after a drawn delay instead (the new StartCommand leaves within a few seconds).
//
// With two servers the one that dies may be the peer (peer-stop), with the start sent through it.
func (g *gen) restartStart(kinds []string) {
	restart := harness.Step{Fault: "ms-restart", Duration: time.Duration(rapid.IntRange(5, 60).Draw(g.t, "down")) * time.Second}
	peer := slices.Equal(kinds, []string{"peer-stop"}) || (len(kinds) > 1 && rapid.Bool().Draw(g.t, "the peer"))
	if peer {
		restart.Fault, restart.Server = "peer-stop", "ms2"
		restart.Duration = rapid.SampledFrom([]time.Duration{10 * time.Minute, time.Minute}).Draw(g.t, "for")
	}
	through := func() {
		if peer {
			g.sc.Steps[len(g.sc.Steps)-1].Server = "ms2"
		}
	}
	var v string
	ran := len(g.vms) > 0 && rapid.Bool().Draw(g.t, "a VM that ran")
	switch {
	case ran:
		v = g.someVM()
	case rapid.Bool().Draw(g.t, "ran before"):
		v, ran = g.deploy(g.host(), false), true
	default:
		v = g.deploy(g.host(), true)
		through()
		g.step(harness.Step{Until: "start-sent", VM: v})
		restart.Wait = time.Duration(rapid.IntRange(0, 30).Draw(g.t, "tenths")) * 100 * time.Millisecond
	}
	if ran {
		g.step(harness.Step{Op: "stop", VM: v})
		g.step(harness.Step{Op: "start", VM: v, Async: true})
		through()
		restart.Wait = time.Duration(rapid.IntRange(0, 50).Draw(g.t, "tenths")) * 100 * time.Millisecond
	}
	g.step(restart)
	g.comeBack(v)
}

// outageDeploy: a host's link is cut for longer than the ping timeout (CloudStack's 150 s at the
// defaults; 200 s first, as in the scenario network-left-shutdown) while one or two VMs are deployed
// onto it: the routers' StartCommands fail with the link, and their networks' implementation with
// them. Once the host is Up again, a deploy into the same networks: a network a failed
// implementation left in Shutdown fails it under C5.
func (g *gen) outageDeploy() {
	h := g.host()
	down := rapid.SampledFrom([]time.Duration{200 * time.Second, 5 * time.Minute, 2 * time.Minute}).Draw(g.t, "down")
	g.step(harness.Step{Fault: "disconnect", Host: h, Duration: down, Async: true})
	g.deploy(h, true)
	nets := slices.Clone(g.sc.Steps[len(g.sc.Steps)-1].Networks)
	if rapid.Bool().Draw(g.t, "a second deploy") {
		g.deploy(h, false)
		for _, n := range g.sc.Steps[len(g.sc.Steps)-1].Networks {
			if !slices.Contains(nets, n) {
				nets = append(nets, n)
			}
		}
	}
	g.n++
	name := fmt.Sprintf("vm%d", g.n)
	// past the invariants' report grace after the outage (a start failing within it is explained by
	// the outage), so that a failure of this deploy is the network's doing
	g.step(harness.Step{Until: "host-up", Wait: g.grace + time.Duration(rapid.IntRange(10, 180).Draw(g.t, "then"))*time.Second,
		Op: "deploy", VM: name, Networks: nets, Host: h}) // Host: the host until waits for, and the deploy's
	g.vms = append(g.vms, name)
	g.where[name] = h
	g.nets[name] = nets
}

// retire ends a network's life as its users end it: the VMs with a NIC on it destroyed with
// expunge (now and then one left behind, and the delete refused), then deleteNetwork
// (NetworkOrchestrator.destroyNetwork), which now and then runs beside a deploy into the same
// network: the delete's shutdown may meet the deploy implementing it, as the D1 family's cleanup
// meets a start. The programs' later actions draw among the other networks.
func (g *gen) retire() {
	net := g.network()
	for _, v := range slices.Clone(g.vms) {
		if slices.Contains(g.nets[v], net) && rapid.IntRange(0, 5).Draw(g.t, "leave "+v) < 5 {
			g.step(harness.Step{Op: "destroyExpunge", VM: v})
		}
	}
	race := rapid.Bool().Draw(g.t, "deploy beside the delete")
	g.step(harness.Step{Op: "deleteNetwork", Network: net, Async: race})
	if race {
		g.n++
		g.deployOn(g.host(), fmt.Sprintf("vm%d", g.n), []string{net}, true)
	}
	if g.deleted == nil {
		g.deleted = map[string]bool{}
	}
	g.deleted[net] = true
}

// reconnectFaults make a host's agent connect again (a StartupCommand, the host Connecting until its
// ReadyCommand is answered); connectThen are the faults drawn on top of a cut that caught the connect.
var (
	reconnectFaults = []string{"ms-restart", "agent-kill", "agent-restart"}
	connectThen     = []string{"agent-restart", "agent-kill"}
)

// cutAtConnect, now and then, draws a link cut as connectCut (false, a plain cut, is where a shrink
// goes). Only the current generator's programs draw it, and only those of a world whose history has
// the server's log (the cut waits for a log line); it is a variant of the solo disconnect so that the
// programs without one draw as they did.
func (g *gen) cutAtConnect() bool {
	if g.classic || !g.reach.ServerLog {
		return false
	}
	var kinds []string
	for _, f := range reconnectFaults {
		if slices.Contains(g.faults, f) {
			kinds = append(kinds, f)
		}
	}
	if len(kinds) == 0 || !rapid.Bool().Draw(g.t, "at a connect") {
		return false
	}
	g.connectCut(kinds)
	return true
}

// connectCut: a host's agent reconnects (a server restart, its agent killed or restarted) and its
// link is cut the moment the server starts on the connection (the connect's "Reset VM power state
// sync" line, before its ReadyCommand): the ReadyCommand times out, the host stays Connecting with
// no pings, and the ping timeout investigates a Connecting host. Now and then a second fault lands
// on the host while it is so (a minute later): the investigation's verdict then meets a host that
// changed under it. These are the host rows from Connecting (issue 33).
func (g *gen) connectCut(kinds []string) {
	h := g.host()
	first := harness.Step{Fault: rapid.SampledFrom(kinds).Draw(g.t, "fault"), Host: h, Duration: 10 * time.Second, Async: true}
	if first.Fault == "ms-restart" {
		first.Host = ""
	}
	g.step(first)
	// past the ping timeout and the investigation's 90 s of commands first (the host's verdict
	// reached while the link is still cut), then shorter than the ping timeout
	cut := rapid.SampledFrom([]time.Duration{5 * time.Minute, 100 * time.Second, 40 * time.Second}).Draw(g.t, "cut")
	g.step(harness.Step{Until: "log", Line: "Reset VM power state sync for host", Host: h, Fault: "disconnect", Duration: cut, Async: true})
	var then []string
	for _, f := range connectThen {
		if slices.Contains(g.faults, f) {
			then = append(then, f)
		}
	}
	if len(then) > 0 && rapid.Bool().Draw(g.t, "then a fault") {
		g.step(harness.Step{Wait: time.Minute, Fault: rapid.SampledFrom(then).Draw(g.t, "then"), Host: h, Duration: 3 * time.Minute, Async: true})
	}
}

// comeBack: once the host has reported again, what did the server make of the VM?
func (g *gen) comeBack(v string) {
	if rapid.Bool().Draw(g.t, "come back later") {
		g.step(harness.Step{Wait: time.Duration(rapid.IntRange(1, 4).Draw(g.t, "minutes")) * time.Minute,
			Op: rapid.SampledFrom([]string{"destroyExpunge", "start", "stop"}).Draw(g.t, "op"), VM: v})
	}
}

// drawRemovals is off only in the test that compares the programs drawn with and without thenRemoved.
var drawRemovals = true

// thenRemoved, now and then, follows a program whose last step is a fault on a host (removable) with
// an operator's forced deleteHost of that host (host-remove; false, none, is where a shrink goes):
// at once, while the fault holds, or after the ping timeout and the investigation, when the host is
// Disconnected, Down or Alert if the fault still holds. These are the host rows `-Remove-> Removed`
// (issue 33). The removal comes last, so no later step acts on the removed host; and it is drawn
// after every other draw, so that a program that does not take it draws as it did (its last step
// not a host fault: no draw at all).
func (g *gen) thenRemoved(c *impl.Config) bool {
	if !drawRemovals || g.classic || (g.reach.Faults != nil && !g.reach.Faults["host-remove"]) || len(g.sc.Steps) == 0 {
		return false
	}
	last := g.sc.Steps[len(g.sc.Steps)-1]
	if last.Host == "" || last.Until != "" || !slices.Contains(removable, last.Fault) || !rapid.Bool().Draw(g.t, "then removed") {
		return false
	}
	verdict := c.PingTimeout() + 2*time.Minute // the host judged: the ping timeout, then the investigation's commands
	after := rapid.SampledFrom([]time.Duration{verdict, 0, 30 * time.Second}).Draw(g.t, "removed after")
	g.step(harness.Step{Wait: after, Fault: "host-remove", Host: last.Host})
	return true
}
