package explore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/world"
	"github.com/csconform/csconform/harness/world/external"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/linear"
	"pgregory.net/rapid"
)

// Detectors say which checkers judge a run.
type Detectors struct {
	Invariants bool
	Linear     bool
}

// Both is the default: a finding of either detector fails the run.
var Both = Detectors{Invariants: true, Linear: true}

// Options say what to explore.
type Options struct {
	Profile   string        // a name for reports (cloudstack-4.22, fixed, or "custom")
	Defects   impl.Switches // the switches the server runs with
	Detectors Detectors
	// Driver is the world programs run in, by world.All' name: "sim" (default, deterministic),
	// or a real-time one ("container": the server and hosts in Docker containers, a small budget;
	// invariants only, the server's history stays in its container).
	Driver string
	// Domains is the container driver's choice of domains (container.DomainsAuto when "").
	Domains string
	// Ctx stops a run (Ctrl-C): a simulated case between two scheduler steps, a container run at
	// its next step; the cases after it are not run. nil: never.
	Ctx context.Context
	// Seen, if set, is told of every case run (progress, the last program).
	Seen func(*Outcome)
	// Guide, if set, carries the coverage and the feedback from one Explore call to the next (the
	// chunks of one csconform explore run); nil: each call has its own.
	Guide *Guide
	// Classic draws programs as explore did before swarm testing, drawn configuration, multi-NIC VMs
	// and coverage feedback (ClassicProgramFor, rapid's own sequence of seeds): csconform bench's
	// baseline.
	Classic bool
	// Peers draws programs with two management servers now and then, and peer-stop (the simulator).
	Peers bool
	// Scheduler is the simulator's strategy (sim driver only; the zero value is random).
	Scheduler sim.Strategy

	shrink *shrinkBudget // set by Explore: how many more runs shrinking may make
}

// ErrInterrupted is an exploration stopped by its context (Ctrl-C) before its budget.
var ErrInterrupted = errors.New("interrupted")

func (o Options) interrupted() bool { return o.Ctx != nil && o.Ctx.Err() != nil }

// Outcome is one program's run and both detectors' verdicts.
type Outcome struct {
	Program *harness.Scenario
	Actions int // how many actions the program was drawn as (its steps may be more)
	// Seed is the case's rapid seed: Explore(o, 1, Seed) runs this program again (0 where the
	// exploration was Classic, whose seeds rapid keeps to itself).
	Seed    uint64
	Result  *harness.Result
	Illegal []linear.Result // the partitions no sequential order explains
	// Undecided are the partitions the checker ran out of time on: not known to be linearizable.
	Undecided []linear.Result
}

// Failed says whether the detectors flag the run.
func (o *Outcome) Failed(d Detectors) bool {
	return (d.Invariants && len(o.Result.Violations) > 0) || (d.Linear && len(o.Illegal) > 0)
}

// Run runs a program once and checks it.
func Run(sc *harness.Scenario, o Options) (*Outcome, error) {
	w, err := o.world()
	if err != nil {
		return nil, err
	}
	if o.Scheduler.Kind != sim.Random {
		sc.Scheduler = o.Scheduler // its counterexample.yaml then replays under the same strategy
	}
	res, err := harness.Run(w, sc, harness.RunOptions{Profile: o.Profile, Defects: o.Defects, Seed: sc.Seed, Ctx: o.Ctx, Domains: o.Domains,
		Limits: harness.Limits{Ctx: o.Ctx, Scheduler: o.Scheduler}})
	if err != nil {
		return nil, err
	}
	return &Outcome{Program: sc, Result: res, Illegal: res.NotLinearizable, Undecided: res.Undecided}, nil
}

// world is the world programs run in.
func (o Options) world() (harness.WorldDef, error) {
	w, err := world.Named(cmp.Or(o.Driver, "sim"))
	if err == nil && w.Name == external.Def.Name {
		err = fmt.Errorf("explore does not run against %s (%s)", w.Name, w.Doc)
	}
	return w, err
}

// RealTime says whether the world runs in real time (a case takes minutes: a small budget).
func (o Options) RealTime() bool {
	w, err := o.world()
	return err == nil && !w.Caps.Can(harness.VirtualTime)
}

// reach is what the world can do: in real time, less host-unreachable (ContainerReach says why).
func (o Options) reach() Reach {
	w, err := o.world()
	if err != nil {
		return Everything // Run says why
	}
	if !w.Caps.Can(harness.VirtualTime) {
		return ReachOf(w.Caps, false, "host-unreachable")
	}
	return ReachOf(w.Caps, o.Peers)
}

func (o Options) program(t *rapid.T, r Reach) (*harness.Scenario, int) {
	if o.Classic {
		return ClassicProgramFor(t, r)
	}
	return ProgramFor(t, r)
}

// programOf draws, without running it, the program rapid draws for a case from seed s.
func programOf(r Reach) func(s uint64) *harness.Scenario {
	gen := rapid.Custom(func(t *rapid.T) *harness.Scenario { sc, _ := ProgramFor(t, r); return sc })
	return func(s uint64) *harness.Scenario { return gen.Example(int(s)) }
}

// Property is the rapid property: a random program runs without a finding.
func Property(o Options) func(*rapid.T) {
	if o.Detectors == (Detectors{}) {
		o.Detectors = Both
	}
	return func(t *rapid.T) {
		reach := o.reach()
		if o.interrupted() {
			t.Skip("interrupted")
		}
		sc, actions := o.program(t, reach)
		if err := sc.Validate(); err != nil {
			t.Fatalf("generated an invalid program: %v", err)
		}
		key := o.shrink.key(sc) // before Run, which sets the program's scheduler
		out, spent := o.shrink.lookup(key)
		if spent {
			return // shrinking's budget is spent: a program not yet run is taken as passing
		}
		if out == nil {
			var err error
			out, err = Run(sc, o)
			if err != nil && o.interrupted() {
				t.Skip("interrupted")
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			out.Actions = actions
		}
		if o.Seen != nil {
			o.Seen(out)
		}
		o.shrink.record(key, out, o.Detectors)
		if out.Failed(o.Detectors) {
			t.Fatalf("%s", out.Counterexample())
		}
	}
}

// Finding is what an exploration found.
type Finding struct {
	// Seed replays the failing case: go test -rapid.seed=N, or csconform explore --seed N --budget 1.
	Seed uint64
	// Cases is how many cases ran until the first failure (before shrinking).
	Cases int
	// Shrunk is the smallest failing program rapid found, run once more.
	Shrunk *Outcome
	// Report is rapid's own message.
	Report string
	// Attribution names the finding's defect (Attribute; nil until asked).
	Attribution *Attribution
}

// rapid keeps its settings in the flag package; explorations run one at a time.
var rapidMu sync.Mutex

// Explore runs up to checks cases from seed (0: a random one) and returns the shrunk finding, or nil.
// shrinkRuns bounds the minimisation by the runs it makes (0: DefaultShrinkRuns; negative: none, the
// finding is the failing case as drawn), never by time, so a seed shrinks to the same program on any
// machine, loaded or idle. The first case is seed's program; the guide (o.Guide, or one of its own)
// picks each later one among candidate seeds drawn from seed, so the same seed runs the same sequence
// of cases. Classic runs rapid's own sequence instead.
func Explore(o Options, checks int, seed uint64, shrinkRuns int) (*Finding, int, error) {
	rapidMu.Lock()
	defer rapidMu.Unlock()
	// rapid asks testing.Short(); outside go test that needs the testing flags, parsed
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	// rapid divides its checks by 5 under go test -short, which made a budget below 5 zero cases (and
	// rapid then never ends) and every budget a fifth; the budget is the caller's, exactly.
	perCheck := checks
	if !o.Classic {
		perCheck = 1 // one rapid check per case, each from the seed the guide picked
	}
	if testing.Short() {
		perCheck *= 5
	}
	if seed == 0 && !o.Classic {
		seed = rand.Uint64() | 1
	}
	// rapid's own bound on shrinking is wall time (30 s by default): set out of reach, so the run
	// budget alone ends it
	restore := setFlags(map[string]string{"rapid.checks": strconv.Itoa(perCheck), "rapid.seed": strconv.FormatUint(seed, 10),
		"rapid.nofailfile": "true", "rapid.shrinktime": "23h", "rapid.failfile": ""})
	defer restore()
	if shrinkRuns == 0 {
		shrinkRuns = DefaultShrinkRuns
	}
	o.shrink = &shrinkBudget{left: max(shrinkRuns, 0), failing: map[string]*Outcome{}}
	guide := o.Guide
	if guide == nil {
		guide = NewGuide()
	}
	cases, firstFail := 0, 0
	var last *Outcome
	seen := o.Seen
	det := o.Detectors
	if det == (Detectors{}) {
		det = Both
	}
	var current uint64 // the seed of the case being run
	o.Seen = func(out *Outcome) {
		last = out
		out.Seed = current
		if firstFail == 0 {
			cases++
			if out.Failed(det) {
				firstFail = cases
				o.shrink.active = true // every run from here on is shrinking's
			}
			if ev := eventsOf(out.Result); ev != nil {
				cov := CaseCoverage(ev)
				cov.AddSituations(out.Result.Guarded, ev)
				guide.observe(out.Program, cov)
			}
		}
		if seen != nil && firstFail == 0 {
			seen(out)
		}
	}
	tb := &captureTB{}
	if o.Classic {
		rapid.Check(tb, Property(o))
	} else {
		rng := rand.New(rand.NewPCG(seed, guideStream))
		draw := programOf(o.reach())
		for i := 0; i < checks && !o.interrupted(); i++ {
			s := seed
			if i > 0 {
				s = guide.next(rng, draw)
			}
			current = s
			_ = flag.Set("rapid.seed", strconv.FormatUint(s, 10))
			tb = &captureTB{}
			rapid.Check(tb, Property(o))
			if tb.failed {
				break
			}
		}
	}
	if o.interrupted() {
		// every case after the interruption was skipped: what ran is in cases
		return nil, cases, ErrInterrupted
	}
	if !tb.failed {
		return nil, cases, nil
	}
	msg := tb.log.String()
	f := &Finding{Cases: firstFail, Shrunk: last, Report: msg}
	if m := seedRE.FindStringSubmatch(msg); m != nil {
		f.Seed, _ = strconv.ParseUint(m[1], 10, 64)
	}
	if last == nil || !last.Failed(det) {
		return f, cases, fmt.Errorf("rapid reported a failure that is not a finding:\n%s", msg)
	}
	return f, cases, nil
}

var seedRE = regexp.MustCompile(`-rapid\.seed=(\d+)`)

func setFlags(vals map[string]string) func() {
	old := map[string]string{}
	for k, v := range vals {
		f := flag.Lookup(k)
		if f == nil {
			continue
		}
		old[k] = f.Value.String()
		_ = flag.Set(k, v)
	}
	return func() {
		for k, v := range old {
			_ = flag.Set(k, v)
		}
	}
}

// DefaultShrinkRuns is how many runs shrinking makes at most after a finding (a few seconds of a
// simulated case's 5 ms each; rapid's 30 s made a few thousand, fewer on a loaded machine).
const DefaultShrinkRuns = 4000

// shrinkBudget bounds shrinking by runs. Once a case fails, each run is shrinking's: a program that
// failed before gets its outcome again without a run (rapid replays the program it keeps, and asks
// again when it confirms a smaller one), and once the budget is spent every other program passes
// unrun, so rapid's shrinker finds nothing smaller and stops at the smallest failure so far.
type shrinkBudget struct {
	active  bool
	left    int
	failing map[string]*Outcome // by programKey
}

// lookup says what a program's run would be: a failing outcome kept (no run needed), spent (pass it
// unrun), or neither (run it; counted).
func (b *shrinkBudget) lookup(key string) (out *Outcome, spent bool) {
	if b == nil || !b.active {
		return nil, false
	}
	if out := b.failing[key]; out != nil {
		return out, false
	}
	if b.left <= 0 {
		return nil, true
	}
	b.left--
	return nil, false
}

// record keeps a failing outcome while shrinking.
func (b *shrinkBudget) record(key string, out *Outcome, d Detectors) {
	if b != nil && b.active && out.Failed(d) {
		b.failing[key] = out
	}
}

// key is a program as drawn, as text: two draws of the same program have the same key. Every case
// is keyed, so the first failure is kept too and rapid's run that reproduces it is a replay, even
// with no runs to shrink with.
func (b *shrinkBudget) key(sc *harness.Scenario) string {
	if b == nil {
		return ""
	}
	j, err := json.Marshal(sc)
	if err != nil {
		panic(fmt.Sprintf("explore: a program that does not marshal: %v", err))
	}
	return string(j)
}

// captureTB is the testing.TB rapid reports to outside go test.
type captureTB struct {
	failed bool
	log    strings.Builder
}

func (c *captureTB) Helper()                           {}
func (c *captureTB) Name() string                      { return "explore" }
func (c *captureTB) Logf(format string, args ...any)   { fmt.Fprintf(&c.log, format+"\n", args...) }
func (c *captureTB) Log(args ...any)                   { fmt.Fprintln(&c.log, args...) }
func (c *captureTB) Skipf(format string, args ...any)  { c.Logf(format, args...) }
func (c *captureTB) Skip(args ...any)                  { c.Log(args...) }
func (c *captureTB) SkipNow()                          {}
func (c *captureTB) Errorf(format string, args ...any) { c.failed = true; c.Logf(format, args...) }
func (c *captureTB) Error(args ...any)                 { c.failed = true; c.Log(args...) }
func (c *captureTB) Fatalf(format string, args ...any) { c.Errorf(format, args...) }
func (c *captureTB) Fatal(args ...any)                 { c.Error(args...) }
func (c *captureTB) FailNow()                          { c.failed = true }
func (c *captureTB) Fail()                             { c.failed = true }
func (c *captureTB) Failed() bool                      { return c.failed }

// Invariants lists the invariants a run broke, sorted, once each.
func (o *Outcome) Invariants() []string {
	var out []string
	for _, v := range o.Result.Violations {
		if !slices.Contains(out, v.Invariant) {
			out = append(out, v.Invariant)
		}
	}
	slices.Sort(out)
	return out
}
