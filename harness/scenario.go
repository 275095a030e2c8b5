package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Scenario is a scenario file: topology, config, timed steps with faults, and the expected outcome per
// profile. See docs/scenario-format.md for the format (every field, op, until condition and fault).
type Scenario struct {
	Name        string            `yaml:"name"`
	Title       string            `yaml:"title"`
	Report      string            `yaml:"report,omitempty"` // the defect report it comes from
	Description string            `yaml:"description,omitempty"`
	Seed        uint64            `yaml:"seed,omitempty"`
	Hosts       []string          `yaml:"hosts"`
	Config      map[string]string `yaml:"config,omitempty"`
	Networks    []NetworkDef      `yaml:"networks,omitempty"`
	Steps       []Step            `yaml:"steps"`
	Settle      time.Duration     `yaml:"settle,omitempty"` // run this long after the last step (default 3m)
	// Lenient runs go on where a strict one stops (generated programs): an until condition gives up
	// after 5 minutes, and a fault with nothing to act on (a VM without a domain) is skipped.
	Lenient bool              `yaml:"lenient,omitempty"`
	Expect  map[string]Expect `yaml:"expect,omitempty"`
	// Scheduler is the simulator's strategy the scenario's interleaving was found with (random or
	// pct[:depth]; a program explore found under PCT replays only under PCT). A run's own
	// Limits.Scheduler, when not random, takes precedence.
	Scheduler sim.Strategy `yaml:"scheduler,omitempty"`
	// ManagementServers is how many management servers share the database (default 1; simulator
	// only): ms1 takes the API calls, ms2 … msN own the hosts the balancer gives them.
	ManagementServers int `yaml:"managementServers,omitempty"`
}

// NetworkDef is a network that exists before the steps run.
type NetworkDef struct {
	Name       string        `yaml:"name"`
	Persistent bool          `yaml:"persistent,omitempty"`
	Age        time.Duration `yaml:"age,omitempty"` // created this long before the steps (set by backdating)
	// Primed: implemented once by a VM that was then destroyed, and shut down by the network GC (the
	// seed 000 A/B's starting point: state Allocated, router stopped).
	Primed bool `yaml:"primed,omitempty"`
	// VM: with primed, the VM that implemented it is kept (stopped) under this name for a later start.
	VM string `yaml:"vm,omitempty"`
}

// Step is one client operation, fault, wait or configuration change. Operations run to completion
// before the next step unless async.
type Step struct {
	Case     string        `yaml:"case,omitempty"` // a label for the report's table
	Wait     time.Duration `yaml:"wait,omitempty"` // wait this long first
	Op       string        `yaml:"op,omitempty"`
	VM       string        `yaml:"vm,omitempty"`
	Networks []string      `yaml:"networks,omitempty"`
	Host     string        `yaml:"host,omitempty"`
	Key      string        `yaml:"key,omitempty"`
	Value    string        `yaml:"value,omitempty"`
	Async    bool          `yaml:"async,omitempty"`
	Fault    string        `yaml:"fault,omitempty"`
	Network  string        `yaml:"network,omitempty"`
	Duration time.Duration `yaml:"duration,omitempty"`
	Detail   string        `yaml:"detail,omitempty"`
	// Server: the management server a fault acts on (peer-stop: ms2 … msN).
	Server string `yaml:"server,omitempty"`
	// HA: a deploy of an HA-enabled VM (the service offering's offer_ha).
	HA bool `yaml:"ha,omitempty"`
	// Until waits, before the step, for a condition: start-sent (a StartCommand for vm went out),
	// running (vm's record is Running), implementing (network is Implementing), host-up (host is Up),
	// log (a server log line containing Line was written since the step began, about the first of
	// vm, network and host the step names, if any).
	Until string `yaml:"until,omitempty"`
	// Line: with until: log, the text the log line contains.
	Line string `yaml:"line,omitempty"`
	// Prime: the step is part of the scenario's set-up, not under test (priming a network with a VM
	// deployed, expunged and the network GC's shutdown awaited). Only leading steps may be. A world
	// that scales CloudStack's timings while it primes (libvirt, live: LibvirtScaling) keeps them
	// scaled through these steps; the simulator runs them as any other.
	Prime bool `yaml:"prime,omitempty"`
}

// Untils are the conditions a step can wait for.
var Untils = []string{"start-sent", "running", "implementing", "host-up", "log"}

// Expect is the expected outcome under one profile.
type Expect struct {
	// Violations: exactly these invariants are violated (empty = none), besides MayViolate.
	Violations []string `yaml:"violations"`
	// MayViolate: invariants whose violation depends on the seed's interleaving.
	MayViolate []string `yaml:"mayViolate,omitempty"`
	// Cases: a case's result: passed, failed, retried (passed after a failed first attempt), any.
	Cases map[string]string `yaml:"cases,omitempty"`
	// States: a VM's record at the end (Running, Stopped, Error, Expunged, …), or alternatives
	// joined by "|" where the interleaving decides among them ("Running|Stopped").
	States map[string]string `yaml:"states,omitempty"`
}

// expectableStates are the VM states expect.states may name: VirtualMachine.State and Expunged (the
// row is gone).
func expectableStates() []string {
	var out []string
	for _, st := range vm.States() {
		out = append(out, string(st))
	}
	return append(out, "Expunged")
}

// StateAlternatives are the states an expect.states entry allows: one, or several joined by "|".
func StateAlternatives(want string) []string { return strings.Split(want, "|") }

// Open reports whether the expectation leaves VM name's end to the interleaving: alternatives.
func (e Expect) Open(name string) bool {
	return len(StateAlternatives(e.States[name])) > 1
}

// CaseResults are the results expect.cases may name: passed, failed, retried (passed after a failed
// first attempt) or any.
var CaseResults = []string{"passed", "failed", "retried", "any"}

// Ops a step may name.
var Ops = []string{"createNetwork", "deleteNetwork", "deploy", "allocate", "start", "startNoRetry", "stop", "forceStop", "destroy", "destroyExpunge", "expunge", "migrate", "recover", "setConfig"}

// The bounds of a scenario's size (Validate refuses a larger one as bad input): well above the
// built-in scenarios and what scalebench.Scenario generates for bench --scale (800 hosts of 10 VMs in
// docs/architecture.md), far below where a run outgrows a machine (a file of 100,000 hosts grew to
// 2.9 GB before it ran a step).
const (
	MaxScenarioHosts = 2_000
	// MaxScenarioVMs counts the VMs the scenario creates: its deploy and allocate steps and its primed
	// networks' VMs.
	MaxScenarioVMs   = 50_000
	MaxScenarioSteps = 100_000
)

// ParseScenario reads and validates a scenario file's content.
func ParseScenario(data []byte, source string) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %v", source, yamlError(err))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	return &s, nil
}

// Validate checks names and references.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("scenario has no name")
	}
	if len(s.Hosts) == 0 {
		return fmt.Errorf("scenario %s lists no hosts", s.Name)
	}
	if err := s.checkSize(); err != nil {
		return err
	}
	if s.Settle < 0 {
		return fmt.Errorf("scenario %s: settle %s is negative", s.Name, s.Settle)
	}
	if _, err := impl.NewConfig(s.Config); err != nil {
		return fmt.Errorf("scenario %s: %v", s.Name, err)
	}
	if s.ManagementServers < 0 || s.ManagementServers > MaxManagementServers {
		return fmt.Errorf("scenario %s: managementServers %d: from 1 to %d", s.Name, s.ManagementServers, MaxManagementServers)
	}
	servers := serverNames(max(s.ManagementServers, 1))
	nets := map[string]bool{}
	vms := map[string]bool{}
	for _, n := range s.Networks {
		if n.Name == "" || nets[n.Name] {
			return fmt.Errorf("scenario %s: network names must be unique and non-empty", s.Name)
		}
		if n.Age < 0 {
			return fmt.Errorf("scenario %s: network %s: age %s is negative", s.Name, n.Name, n.Age)
		}
		nets[n.Name] = true
	}
	for _, n := range s.Networks {
		if n.VM != "" {
			vms[n.VM] = true
		}
	}
	hosts := map[string]bool{}
	for _, h := range s.Hosts {
		hosts[h] = true
	}
	for i, st := range s.Steps {
		where := fmt.Sprintf("scenario %s step %d", s.Name, i+1)
		for _, d := range []struct {
			field string
			d     time.Duration
		}{{"wait", st.Wait}, {"duration", st.Duration}} {
			if d.d < 0 {
				return fmt.Errorf("%s: %s %s is negative", where, d.field, d.d)
			}
		}
		if st.Host != "" && !hosts[st.Host] {
			return fmt.Errorf("%s: unknown host %q", where, st.Host)
		}
		if st.Until != "" && !slices.Contains(Untils, st.Until) {
			return fmt.Errorf("%s: unknown until %q (known: %s)", where, st.Until, strings.Join(Untils, ", "))
		}
		if st.Until == "log" && st.Line == "" {
			return fmt.Errorf("%s: until log needs a line", where)
		}
		if st.Op != "" && st.Server != "" && !slices.Contains(servers, st.Server) {
			return fmt.Errorf("%s: unknown server %q (a scenario with managementServers: %d has %v)", where, st.Server, len(servers), servers)
		}
		if st.Prime && i > 0 && !s.Steps[i-1].Prime {
			return fmt.Errorf("%s: prime: only leading steps are the set-up (step %d is not prime)", where, i)
		}
		switch {
		case st.Op != "" && st.Fault != "":
			return fmt.Errorf("%s: a step is an op or a fault, not both", where)
		case st.Fault != "":
			if err := faults.Validate(st.FaultSpec()); err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			if st.Server != "" && !slices.Contains(servers[1:], st.Server) {
				return fmt.Errorf("%s: unknown server %q (the peers of a scenario with managementServers: %d are %v)", where, st.Server, len(servers), servers[1:])
			}
		case st.Op == "":
			if st.Wait <= 0 && st.Until == "" {
				return fmt.Errorf("%s: nothing to do (no op, fault or wait)", where)
			}
		default:
			if !slices.Contains(Ops, st.Op) {
				return fmt.Errorf("%s: unknown op %q (known: %s)", where, st.Op, strings.Join(Ops, ", "))
			}
			switch st.Op {
			case "createNetwork":
				if st.Network == "" {
					return fmt.Errorf("%s: createNetwork needs network", where)
				}
				nets[st.Network] = true
			case "deleteNetwork":
				// a network deleted may be named again: its delete fails, as CloudStack's does for a
				// network it cannot find, and so does a deploy into it
				if !nets[st.Network] {
					return fmt.Errorf("%s: deleteNetwork of unknown network %q", where, st.Network)
				}
			case "deploy", "allocate":
				if st.VM == "" || len(st.Networks) == 0 {
					return fmt.Errorf("%s: deploy needs vm and networks", where)
				}
				for _, n := range st.Networks {
					if !nets[n] {
						return fmt.Errorf("%s: unknown network %q", where, n)
					}
				}
				vms[st.VM] = true
			case "setConfig":
				if _, err := impl.NewConfig(map[string]string{st.Key: st.Value}); err != nil {
					return fmt.Errorf("%s: %v", where, err)
				}
			default:
				if !vms[st.VM] {
					return fmt.Errorf("%s: %s of unknown vm %q (deploy it first)", where, st.Op, st.VM)
				}
				if st.Op == "migrate" && st.Host == "" {
					return fmt.Errorf("%s: migrate needs host (the destination)", where)
				}
			}
		}
	}
	for p, e := range s.Expect {
		if _, err := impl.ProfileSwitches(p); err != nil {
			return fmt.Errorf("scenario %s: expect: %v", s.Name, err)
		}
		for _, v := range append(append([]string(nil), e.Violations...), e.MayViolate...) {
			if !slices.Contains(invariantNames, v) {
				return fmt.Errorf("scenario %s: expect %s: unknown invariant %q (known: %s)", s.Name, p, v, strings.Join(invariantNames, ", "))
			}
		}
		for c, r := range e.Cases {
			if !slices.Contains(CaseResults, r) {
				return fmt.Errorf("scenario %s: expect %s: case %s: result must be passed, failed, retried or any", s.Name, p, c)
			}
		}
		for v, want := range e.States {
			for _, alt := range StateAlternatives(want) {
				if !slices.Contains(expectableStates(), alt) {
					return fmt.Errorf("scenario %s: expect %s: states: %s: unknown state %q (known: %s; alternatives joined by |)",
						s.Name, p, v, alt, strings.Join(expectableStates(), ", "))
				}
			}
		}
	}
	return nil
}

// checkSize refuses a scenario past MaxScenarioHosts, MaxScenarioVMs or MaxScenarioSteps.
func (s *Scenario) checkSize() error {
	if len(s.Hosts) > MaxScenarioHosts {
		return fmt.Errorf("scenario %s lists %d hosts: at most %d", s.Name, len(s.Hosts), MaxScenarioHosts)
	}
	if len(s.Steps) > MaxScenarioSteps {
		return fmt.Errorf("scenario %s has %d steps: at most %d", s.Name, len(s.Steps), MaxScenarioSteps)
	}
	vms := 0
	for _, n := range s.Networks {
		if n.Primed {
			vms++
		}
	}
	for _, st := range s.Steps {
		if st.Fault == "" && (st.Op == "deploy" || st.Op == "allocate") {
			vms++
		}
	}
	if vms > MaxScenarioVMs {
		return fmt.Errorf("scenario %s creates %d VMs: at most %d (its deploy and allocate steps and primed networks)", s.Name, vms, MaxScenarioVMs)
	}
	return nil
}

var invariantNames = invariant.Names

// FaultSpec is a fault step as faults.Run applies it.
func (st Step) FaultSpec() faults.Spec {
	return faults.Spec{Kind: st.Fault, Host: st.Host, VM: st.VM, Network: st.Network, Duration: st.Duration, Detail: st.Detail, Server: st.Server}
}

// CaseResult is one row of the repro table.
type CaseResult struct {
	Case       string        `json:"case"`
	Op         string        `json:"op"`
	Path       string        `json:"path"`
	VM         string        `json:"vm"`
	Network    string        `json:"network,omitempty"`
	AgeMinutes int           `json:"ageMinutes,omitempty"`
	Result     string        `json:"result"` // passed, failed, retried, pending
	Duration   time.Duration `json:"duration"`
	Err        string        `json:"error,omitempty"`
	Cleanup    string        `json:"cleanup,omitempty"` // what the orphaned-network cleanup did meanwhile
	FinalState string        `json:"finalState,omitempty"`
	client     string
	networkID  int64
}

// Result is a scenario run.
type Result struct {
	Scenario string   `json:"scenario"`
	Title    string   `json:"title"`
	Profile  string   `json:"profile"`
	Defects  []string `json:"defects"`
	Seed     uint64   `json:"seed"`
	// Scheduler is the simulator's strategy when it is not the default (random): "pct:8".
	Scheduler  string       `json:"scheduler,omitempty"`
	Cases      []CaseResult `json:"cases"`
	Violations []Violation  `json:"violations"`
	// NotLinearizable are the objects whose history no sequential order explains (the second
	// detector, model/linear).
	NotLinearizable []linear.Result `json:"notLinearizable,omitempty"`
	// Undecided are the objects the checker ran out of time on: not known to be linearizable.
	Undecided []linear.Result `json:"undecided,omitempty"`
	// LinearChecked says whether the run's history could be checked for linearizability (a world
	// whose server runs out of reach, in a container, records no history of its own).
	LinearChecked bool     `json:"linearizabilityChecked"`
	Mismatches    []string `json:"mismatches,omitempty"` // expected outcome not met
	// Guarded is, by transition guard, how many state changes it decided in the run: the situations
	// the run reached (explore counts the cases that reached each).
	Guarded    map[string]int `json:"-"`
	Expected   bool           `json:"expectationsChecked"`
	VirtualEnd time.Duration  `json:"virtualDuration"`
	Steps      uint64         `json:"schedulerSteps"`
	Started    time.Time      `json:"-"` // the world's time when the scenario started (reports count from it)
	// Notes are what a real world says about itself (what is simulated, what the server saw of each
	// fault), printed after the table.
	Notes []string `json:"notes,omitempty"`
	// External is the API a run against an external CloudStack drove (no profile: Profile is the
	// one --expect compared with, if any); Run names what it created; Leftovers is what its cleanup
	// could not remove.
	External  string   `json:"external,omitempty"`
	Run       string   `json:"run,omitempty"`
	Leftovers []string `json:"leftovers,omitempty"`
	// Rec is the run's history, every world's.
	Rec *Recorder `json:"-"`
	// cluster is the in-process cluster (simulator, live, libvirt), for the harness's own tests.
	cluster *Cluster
	// outside: the server ran out of reach (in a container): Rec holds the client's operations and
	// what was observed, not the server's own events.
	Outside bool `json:"-"`
}

// ServerHistory is the run's history where it holds the server's own events (state changes, log
// lines), nil where the server ran out of reach.
func (r *Result) ServerHistory() iter.Seq[history.Event] {
	if r == nil || r.Rec == nil || r.Outside {
		return nil
	}
	return r.Rec.History().All()
}

// stopped turns the simulator's bound of steps and an interruption into a *StoppedError; any other
// error is returned as it is.
func stopped(err error, lim Limits) error {
	var le *sim.LimitError
	switch {
	case errors.As(err, &le):
		return &StoppedError{Reason: fmt.Sprintf("%v (--max-steps %d): the run stopped there", err, le.Steps)}
	case lim.Ctx != nil && lim.Ctx.Err() != nil && errors.Is(err, context.Cause(lim.Ctx)):
		return &StoppedError{Reason: "interrupted: the run stopped between two scheduler steps", Interrupted: true}
	}
	return err
}

// checkLinear runs the linearizability checker on a run's history with the run's staleness bounds
// (none for a world whose snapshots cannot judge ghost records): what it cannot decide in time is
// Undecided, never taken for linearizable.
func (res *Result) checkLinear(events iter.Seq[history.Event], b linear.Bounds) {
	rs := linear.CheckWith(linear.PartitionsOf(events), 10*time.Second, b)
	res.NotLinearizable, res.Undecided = linear.Illegal(rs), linear.Undecided(rs)
}

// ProfileMatches says whether switches d are profile's.
func ProfileMatches(profile string, d impl.Switches) bool {
	p, err := impl.ProfileSwitches(profile)
	if err != nil {
		return false
	}
	for k, v := range p {
		if d[k] != v {
			return false
		}
	}
	return true
}

// setup creates the scenario's networks; primed ones are implemented once and left to the network GC.
func (c *Cluster) setup(sc *Scenario) error {
	var primed []string
	for _, n := range sc.Networks {
		if err := c.CreateNetwork("setup", n.Name, n.Persistent); err != nil {
			return err
		}
		if n.Primed {
			primed = append(primed, n.Name)
		}
	}
	for _, n := range sc.Networks {
		if !n.Primed {
			continue
		}
		vmName, op := n.VM, "stop"
		if vmName == "" {
			vmName, op = "prime-"+n.Name, "destroyExpunge"
		}
		if err := c.Deploy("setup", vmName, []string{n.Name}, sc.Hosts[0]); err != nil {
			return fmt.Errorf("priming network %s: %v", n.Name, err)
		}
		if err := c.VMOp("setup", op, vmName, ""); err != nil {
			return fmt.Errorf("priming network %s: %v", n.Name, err)
		}
	}
	if len(primed) > 0 {
		deadline := c.Now().Add(4 * (c.Config.Seconds("network.gc.interval") + c.Config.Seconds("network.gc.wait")))
		for c.Now().Before(deadline) {
			allDown := true
			for _, n := range primed {
				id, _ := c.NetworkID(n)
				if nw := c.DB.Network(id); nw.State != network.Allocated || c.DB.VM(nw.RouterID).State != vm.Stopped {
					allDown = false
				}
			}
			if allDown {
				break
			}
			c.Sleep(10 * time.Second)
		}
	}
	for _, n := range sc.Networks {
		if n.Age > 0 {
			id, _ := c.NetworkID(n.Name)
			if err := c.DB.SetNetworkCreated(id, c.Now().Add(-n.Age)); err != nil {
				return err
			}
		}
	}
	return nil
}

func pathOf(op string) string {
	switch op {
	case "startNoRetry":
		return "boot group"
	case "start":
		return "plain start"
	case "deploy":
		return "deploy"
	}
	return op
}

// finish fills the table from the history and the server's log.
func (r *Result) finish(c *Cluster) {
	fillTable(r, c.Rec, c)
	r.Violations = c.Violations
}

// inTimeOrder says whether es is in time order (the simulator's always is), reading only the events
// past those already known to be.
func (c *Cluster) inTimeOrder(es Events) bool {
	if c.sortedEvents < es.Len() {
		var prev time.Time
		if c.sortedEvents > 0 {
			prev = es.At(c.sortedEvents - 1).Time
		}
		for e := range es.From(c.sortedEvents) {
			if e.Time.Before(prev) {
				return false
			}
			prev = e.Time
		}
		c.sortedEvents = es.Len()
	}
	return true
}

// logsDuring is object's log events from from to end, in history order: what a scan of the history
// that stops at the first event after end finds. For a history in time order it reads an index of
// each object's log lines (finish asks for every case: a scan each made finishing a deploy of
// thousands of VMs quadratic).
func (c *Cluster) logsDuring(object string, from, end time.Time) []history.Event {
	all := c.Rec.History()
	var out []history.Event
	if !c.inTimeOrder(all) { // the scan
		for e := range all.All() {
			if e.Time.Before(from) {
				continue
			}
			if e.Time.After(end) {
				break
			}
			if e.Object == object && e.Kind == history.Log {
				out = append(out, e)
			}
		}
		return out
	}
	if c.logIdx == nil {
		c.logIdx = map[string][]int{}
	}
	for ; c.logIdxN < all.Len(); c.logIdxN++ {
		if e := all.At(c.logIdxN); e.Kind == history.Log {
			c.logIdx[e.Object] = append(c.logIdx[e.Object], c.logIdxN)
		}
	}
	ix := c.logIdx[object]
	i, _ := slices.BinarySearchFunc(ix, from, func(p int, t time.Time) int {
		if all.At(p).Time.Before(t) {
			return -1
		}
		return 1
	})
	for _, p := range ix[i:] {
		if all.At(p).Time.After(end) {
			break
		}
		out = append(out, *all.At(p))
	}
	return out
}

// retried: the op passed but a start attempt inside it failed first.
func (c *Cluster) retried(op invariant.ClientOp) bool {
	for _, e := range c.logsDuring("vm:"+op.VMID, op.Call, op.Return) {
		if linear.IsStartRetry(e.Detail) {
			return true
		}
	}
	return false
}

// cleanupDuring says what the orphaned-network cleanup did to the network during the op.
func (c *Cluster) cleanupDuring(nid int64, op invariant.ClientOp) string {
	obj := impl.NetworkObject(nid)
	end := op.Return
	if end.IsZero() {
		end = c.Now()
	}
	var implStart time.Time
	var orphaned []string
	seen := 0
	for _, e := range c.logsDuring(obj, op.Call, end) {
		switch {
		case strings.HasPrefix(e.Detail, "Lock is acquired for network id") && strings.Contains(e.Detail, "implement"):
			implStart = e.Time
		case strings.HasPrefix(e.Detail, "Found orphaned network"):
			orphaned = append(orphaned, fmt.Sprintf("orphaned %.1f s after the implementation started", e.Time.Sub(implStart).Seconds()))
		case strings.Contains(e.Detail, "in Implementing state is only") || strings.Contains(e.Detail, "has been Implementing for only") || strings.Contains(e.Detail, "not orphaned"):
			seen++
		}
	}
	switch {
	case len(orphaned) > 0:
		return strings.Join(orphaned, "; ")
	case seen > 0:
		return fmt.Sprintf("saw it Implementing %d times, no orphan", seen)
	}
	return ""
}

// compare lists where a run differs from what the scenario expects.

// compareWith is compare with the VMs' final records read by vmState.
func (e Expect) compareWith(r *Result, vmState func(string) (vm.State, bool)) []string {
	var out []string
	got := map[string]bool{}
	for _, v := range r.Violations {
		got[v.Invariant] = true
	}
	want := map[string]bool{}
	for _, v := range e.Violations {
		want[v] = true
	}
	for _, n := range invariantNames {
		if slices.Contains(e.MayViolate, n) {
			continue
		}
		if got[n] && !want[n] {
			out = append(out, "unexpected violation of "+n)
		}
		if want[n] && !got[n] {
			out = append(out, "expected a violation of "+n+", found none")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Cases)) {
		w := e.Cases[k]
		found := false
		for _, cr := range r.Cases {
			if cr.Case == k {
				found = true
				if w != "any" && cr.Result != w {
					out = append(out, fmt.Sprintf("case %s: expected %s, got %s", k, w, cr.Result))
				}
			}
		}
		if !found {
			out = append(out, "expected case "+k+" is not in the scenario")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.States)) {
		st, ok := vmState(k)
		if !ok {
			out = append(out, "no VM "+k)
		} else if !slices.Contains(StateAlternatives(e.States[k]), string(st)) {
			out = append(out, fmt.Sprintf("VM %s: expected %s, got %s", k, e.States[k], st))
		}
	}
	return out
}
