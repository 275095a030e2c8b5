// Package explore finds orchestration races from random workloads: rapid draws a program (a topology,
// client operations, faults and waits), the simulator runs it, and both detectors — the invariants
// after every step and the linearizability of every object's history — judge it. A failing program
// shrinks to a short counterexample that replays from its seed and saves as a scenario file.
package explore

import (
	"fmt"
	"time"

	"github.com/csconform/csconform/harness"
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
	where map[string]string // vm -> host
	n     int
	reach Reach
}

// Program draws a program and says how many actions it drew (an action is one operation, fault or
// wait, or one of the weighted interleavings, which takes a few steps).
//
// Program draws a program. Actions are weighted towards the interleavings that matter: a deploy into a
// network older than job.expire.minutes (the orphaned-network cleanup), a bystander's crash while a
// start is in flight with a delayed out-of-band report (stale power report), a destroy while the host's
// agent is away (forced release); the rest are plain operations, single faults and waits.
func Program(t *rapid.T) (*harness.Scenario, int) { return ProgramFor(t, Everything) }

// Reach is what a world can do to a program. The simulator does everything. Hosts in containers do
// what the generator draws too: the server's database survives its container's restart (ms-restart),
// old networks are backdated through the control endpoint, and the guests' faults (guest-shutdown,
// slow-router-boot) go to the hosts' hypervisor containers; primed networks they cannot have, and the
// generator draws none.
type Reach struct {
	AgedNetworks bool
	// Faults lists the faults the world can inject; nil: all of them.
	Faults map[string]bool
}

// Everything is the simulator's reach.
var Everything = Reach{AgedNetworks: true}

// ContainerReach is what harness.RunScenarioContainer accepts.
var ContainerReach = Reach{AgedNetworks: true, Faults: map[string]bool{"crash": true, "guest-shutdown": true,
	"agent-restart": true, "agent-kill": true, "disconnect": true, "stale-report": true, "ms-restart": true,
	"slow-router-boot": true}}

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

// ProgramFor draws a program a world with reach r can run.
func ProgramFor(t *rapid.T, r Reach) (*harness.Scenario, int) {
	g := &gen{t: t, where: map[string]string{}, reach: r}
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
		g.action()
		return true
	})
	n := len(rapid.SliceOfN(act, 1, maxActions).Draw(t, "actions"))
	return g.sc, n
}

func (g *gen) step(s harness.Step) { g.sc.Steps = append(g.sc.Steps, s) }

func (g *gen) host() string { return rapid.SampledFrom(g.sc.Hosts).Draw(g.t, "host") }

func (g *gen) network() string {
	return g.sc.Networks[rapid.IntRange(0, len(g.sc.Networks)-1).Draw(g.t, "network")].Name
}

// deploy adds a deployVirtualMachine of a new VM on host h.
func (g *gen) deploy(h string, async bool) string {
	g.n++
	name := fmt.Sprintf("vm%d", g.n)
	g.step(harness.Step{Op: "deploy", VM: name, Networks: []string{g.network()}, Host: h, Async: async})
	g.vms = append(g.vms, name)
	g.where[name] = h
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

var soloFaults = []string{"crash", "guest-shutdown", "agent-restart", "agent-kill", "disconnect", "ms-restart", "slow-router-boot", "stale-report"}

func (g *gen) action() {
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
		var v string
		if rapid.Bool().Draw(g.t, "during a start") {
			v = g.deploy(g.host(), true)
			g.step(harness.Step{Until: "start-sent", VM: v})
		} else {
			v = g.someVM()
		}
		h := g.where[v]
		kind := rapid.SampledFrom(g.reach.only([]string{"agent-restart", "disconnect", "agent-kill", "ms-restart"})).Draw(g.t, "fault")
		// short outages, and cuts longer than the ping timeout (the server notices only then)
		down := time.Duration(rapid.SampledFrom([]int{5, 10, 20, 60, 200, 200, 200}).Draw(g.t, "down")) * time.Second
		fault := harness.Step{Fault: kind, Host: h, Duration: down, Async: true}
		if kind == "ms-restart" {
			fault.Host = "" // the management server, not the host, goes away
		}
		op := harness.Step{Op: rapid.SampledFrom([]string{"destroyExpunge", "destroy", "forceStop", "stop"}).Draw(g.t, "op"), VM: v}
		if rapid.IntRange(0, 2).Draw(g.t, "operation first") > 0 {
			// the agent goes away with the operation's command in flight
			op.Async = true
			fault.Wait = time.Duration(rapid.IntRange(0, 40).Draw(g.t, "tenths")) * 100 * time.Millisecond
			g.step(op)
			g.step(fault)
		} else {
			op.Wait = g.wait("wait", 10*time.Second) + time.Second
			g.step(fault)
			g.step(op)
		}
		if rapid.Bool().Draw(g.t, "come back later") {
			// once the host has reported again: what did the server make of the VM?
			g.step(harness.Step{Wait: time.Duration(rapid.IntRange(1, 4).Draw(g.t, "minutes")) * time.Minute,
				Op: rapid.SampledFrom([]string{"destroyExpunge", "start", "stop"}).Draw(g.t, "op"), VM: v})
		}
	case w < 90: // a fault on its own
		g.fault(rapid.SampledFrom(g.reach.only(soloFaults)).Draw(g.t, "fault"))
	default: // time passes: GC ticks, pings, network GC
		g.step(harness.Step{Wait: time.Duration(rapid.IntRange(1, 20).Draw(g.t, "minutes")) * time.Minute})
	}
}

func (g *gen) fault(kind string) {
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
	default:
		s.Host = g.host()
		s.Duration = time.Duration(rapid.IntRange(5, 60).Draw(g.t, "down")) * time.Second
	}
	g.step(s)
}
