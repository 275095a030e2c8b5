package explore

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
)

var (
	profileFlag = flag.String("csconform.profile", "fixed", "profile the property test runs against")
	defectsFlag = flag.String("csconform.defects", "", "defect switches instead of the profile (D1,D2a,…)")
	schedFlag   = flag.String("csconform.scheduler", "random", "the simulator's strategy: random or pct[:depth]")
	peersFlag   = flag.Bool("csconform.peers", true, "draw programs with two management servers now and then (explore --peers)")
	randomFlag  = flag.Bool("csconform.random", false, "explore from a random seed instead of the fixed ones (csconform bench measures 20)")
)

// seedFor is the exploration's starting seed: fixed by default, so that CI gives the same verdict
// every time; random with -csconform.random.
func seedFor(name string) uint64 {
	if *randomFlag {
		return uint64(time.Now().UnixNano())
	}
	h := uint64(14695981039346656037)
	for _, c := range name {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// TestExplore is the property: under the fixed profile no random program breaks an invariant or a
// model. Run it against the defects with -csconform.profile=cloudstack-4.22; replay a failure with the
// -rapid.seed it prints (-rapid.checks sets the budget); -csconform.random explores from the clock.
func TestExplore(t *testing.T) {
	sw, err := impl.ProfileSwitches(*profileFlag)
	if *defectsFlag != "" {
		sw, err = impl.ParseDefects(*defectsFlag)
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := sim.ParseStrategy(*schedFlag)
	if err != nil {
		t.Fatal(err)
	}
	// The fixed start unless -rapid.seed (a replay) or -csconform.random says otherwise: a start drawn
	// from the clock made each CI run explore other programs, so a finding turned CI red at random.
	seed, _ := strconv.ParseUint(flag.Lookup("rapid.seed").Value.String(), 10, 64)
	if seed == 0 {
		seed = seedFor(t.Name()) | 1
	}
	checks, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	found, ran, err := Explore(Options{Profile: *profileFlag, Defects: sw, Scheduler: st, Peers: *peersFlag}, checks, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	if found != nil {
		t.Fatalf("seed %d, after %d cases:\n%s\nreplay with -rapid.seed=%d", seed, found.Cases, found.Shrunk.Counterexample(), found.Seed)
	}
	t.Logf("seed %d: %d cases, nothing found", seed, ran)
}

func only(defects ...impl.Defect) impl.Switches {
	sw := impl.Switches{}
	for _, d := range defects {
		sw[d] = true
	}
	return sw
}

// families are the defects each detector must find alone, with the budget it gets: the default
// rapid budget for the seed defects and the planted bug; the cousins exploration found under the
// fixed profile need rarer interleavings (an agent gone for longer than the ping timeout with a start
// in flight; a management-server restart with a start in flight) and get ten times that.
var families = []struct {
	name    string
	defects impl.Switches
	budget  int
	// shrink: how many runs shrinking may make (0: DefaultShrinkRuns); the seed defects'
	// counterexamples must come out short
	shrink int
}{
	{"D1", only(impl.D1), 100, 0},
	{"D2", only(impl.D2a, impl.D2b, impl.D2c, impl.D2d, impl.D2e), 100, 0},
	{"D3", only(impl.D3), 100, 0},
	// 300 cases since the generator draws migrate and recover too (found at case 221 from its seed)
	{"planted: a stop that timed out counts as stopped", only(impl.PlantedStopTimeoutIsSuccess), 300, 200},
	{"C1", only(impl.C1), 1000, 200},
	{"C2", only(impl.C2), 3000, 200}, // C2 often heals itself (the host's report at reconnect marks the VM Running again): more cases
}

// TestEachDetectorFindsEachDefect switches each defect on alone and explores from a random start with
// its budget, once judged by the invariants only and once by linearizability only: both must find it,
// and the shrunk program must be short.
func TestEachDetectorFindsEachDefect(t *testing.T) {
	tier.Need(t, tier.Long) // explores with shrinking
	for _, f := range families {
		for _, det := range []struct {
			name string
			d    Detectors
		}{{"invariants", Detectors{Invariants: true}}, {"linearizability", Detectors{Linear: true}}} {
			t.Run(f.name+"/"+det.name, func(t *testing.T) {
				seed := seedFor(f.name + "/" + det.name)
				found, ran, err := Explore(Options{Profile: f.name, Defects: f.defects, Detectors: det.d}, f.budget, seed, f.shrink)
				if err != nil {
					t.Fatal(err)
				}
				if found == nil {
					t.Fatalf("not found in %d cases from seed %d", ran, seed)
				}
				t.Logf("found after %d cases from seed %d; shrunk (replay with -rapid.seed=%d):\n%s", found.Cases, seed, found.Seed, found.Shrunk.Counterexample())
				if n := found.Shrunk.Actions; f.shrink == 0 && n > 10 {
					t.Errorf("shrunk to %d actions, want at most 10", n)
				}
				// the defect's own finding: its shrunk program passes once the defects are fixed
				again, err := Run(found.Shrunk.Program, Options{Profile: "fixed", Defects: impl.Switches{}})
				if err != nil {
					t.Fatal(err)
				}
				if again.Failed(det.d) {
					t.Errorf("the shrunk program fails under fixed too: not %s's finding", f.name)
				}
			})
		}
	}
}

// TestFixedFindsNothing is the other half of each detector's test: the same budget finds nothing once
// the defects are fixed.
func TestFixedFindsNothing(t *testing.T) {
	seed := seedFor("fixed")
	found, ran, err := Explore(Options{Profile: "fixed", Defects: impl.Switches{}}, 100, seed, 200)
	if err != nil {
		t.Fatal(err)
	}
	if found != nil {
		t.Fatalf("seed %d: found after %d cases:\n%s", seed, found.Cases, found.Shrunk.Counterexample())
	}
	if ran != 100 {
		t.Fatalf("ran %d cases, want 100", ran)
	}
}

// TestFindingReplays: the reported seed fails again on its first case, and a program run twice gives
// the same history, byte for byte.
func TestFindingReplays(t *testing.T) {
	o := Options{Profile: "D3", Defects: only(impl.D3)}
	found, _, err := Explore(o, 100, 42, 200)
	if err != nil || found == nil {
		t.Fatalf("no finding to replay (err %v)", err)
	}
	again, ran, err := Explore(o, 1, found.Seed, 200)
	if err != nil || again == nil || again.Cases != 1 || ran != 1 {
		t.Fatalf("seed %d did not fail on its first case (err %v)", found.Seed, err)
	}
	a, err := Run(found.Shrunk.Program, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(found.Shrunk.Program, o)
	if err != nil {
		t.Fatal(err)
	}
	var ha, hb bytes.Buffer
	for e := range a.Result.Rec.History().All() {
		fmt.Fprintf(&ha, "%+v\n", e)
	}
	for e := range b.Result.Rec.History().All() {
		fmt.Fprintf(&hb, "%+v\n", e)
	}
	if !bytes.Equal(ha.Bytes(), hb.Bytes()) {
		t.Fatal("the same program gave two histories")
	}
}

// TestSavedCounterexampleIsAScenario: a shrunk program saved as a scenario file parses, and the
// conformance runner reproduces what it expects.
func TestSavedCounterexampleIsAScenario(t *testing.T) {
	sw, _ := impl.ProfileSwitches("cloudstack-4.22")
	o := Options{Profile: "cloudstack-4.22", Defects: sw}
	found, _, err := Explore(o, 100, 7, 200)
	if err != nil || found == nil {
		t.Fatalf("no finding (err %v)", err)
	}
	path := filepath.Join(t.TempDir(), "found.yaml")
	if err := found.Shrunk.SaveScenario(path, "cloudstack-4.22"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := harness.ParseScenario(data, path)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	res, err := harness.RunScenario(sc, "cloudstack-4.22", nil, sc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Expected || len(res.Mismatches) > 0 {
		t.Fatalf("saved scenario does not reproduce: %v\n%s", res.Mismatches, data)
	}
}

func TestReports(t *testing.T) {
	o := Options{Profile: "D1", Defects: only(impl.D1)}
	found, ran, err := Explore(o, 100, 3, 200)
	if err != nil || found == nil {
		t.Fatalf("no finding (err %v)", err)
	}
	dir := t.TempDir()
	sum := &Summary{Profile: "D1", Defects: []string{"D1"}, Seed: 3, Budget: 100, Cases: ran, Found: true, Finding: found}
	if err := sum.WriteReports(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.txt", "result.json", "junit.xml", "history.jsonl", "counterexample.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	html, _ := filepath.Glob(filepath.Join(dir, "partition-*.html"))
	if len(html) != len(found.Shrunk.Illegal) {
		t.Errorf("%d visualizations for %d failing partitions", len(html), len(found.Shrunk.Illegal))
	}
	// JUnit: stable names (detector/profile), seed and replay as properties, one failure per finding
	var suite junitSuite
	junit, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err := xml.Unmarshal(junit, &suite); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, junit)
	}
	props := map[string]string{}
	for _, p := range suite.Properties {
		props[p.Name] = p.Value
	}
	if suite.Name != "csconform explore D1" || suite.Failures != 1 || len(suite.Cases) != 2 ||
		suite.Cases[0].Name != "invariants/D1" || suite.Cases[1].Name != "linearizability/D1" ||
		props["seed"] != "3" || !strings.Contains(props["replay"], "--seed "+strconv.FormatUint(found.Seed, 10)+" --budget 1") {
		t.Errorf("junit.xml:\n%s", junit)
	}
	// JSON: the seeds as strings (above 2^53 a number loses digits in jq), and the replay command
	var res map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res["seed"] != "3" || res["replaySeed"] != strconv.FormatUint(found.Seed, 10) || res["replay"] != props["replay"] {
		t.Errorf("result.json: seed %v, replaySeed %v, replay %v", res["seed"], res["replaySeed"], res["replay"])
	}
	// a directory with a run's reports is refused; a run that found nothing writes its last history
	if err := sum.WriteReports(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a second run into %s: %v", dir, err)
	}
	clean := filepath.Join(t.TempDir(), "clean")
	quiet := &Summary{Profile: "fixed", Seed: 1 << 62, Budget: 1, Cases: 1, Last: found.Shrunk}
	if err := quiet.WriteReports(clean); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(clean, "history.jsonl")); err != nil {
		t.Error("a clean run wrote no history:", err)
	}
	if data, _ := os.ReadFile(filepath.Join(clean, "result.json")); !strings.Contains(string(data), `"seed": "4611686018427387904"`) {
		t.Errorf("result.json:\n%s", data)
	}
	if len(html) > 0 {
		page, _ := os.ReadFile(html[0])
		if !strings.Contains(string(page), "<title>csconform: ") || !strings.Contains(string(page), ", seed ") {
			t.Errorf("%s has porcupine's own title", html[0])
		}
		if !strings.Contains(string(page), "[i] ?? i)") {
			t.Errorf("%s numbers its rows instead of naming the actors", html[0])
		}
	}
}

// BenchmarkFindDefect reports, per defect switched on alone, the cases and time to the first finding
// (shrinking excluded). Figures only: csconform bench prints the median and worst over 20 seeds.
func BenchmarkFindDefect(b *testing.B) {
	for _, f := range families {
		b.Run(f.name, func(b *testing.B) {
			cases := 0
			for i := 0; i < b.N; i++ {
				found, ran, err := Explore(Options{Profile: f.name, Defects: f.defects}, f.budget, uint64(i+1)*7919, -1)
				if err != nil {
					b.Fatal(err)
				}
				if found != nil {
					ran = found.Cases
				}
				cases += ran
			}
			b.ReportMetric(float64(cases)/float64(b.N), "cases/find")
		})
	}
}

// BenchmarkExplore is explore's throughput under fixed with every detector and guard on, as
// `csconform explore --profile fixed --seed 1 --scheduler pct:8` runs it (one guide across the cases,
// two management servers now and then): the first 300 cases of seed 1 an iteration, in cases/s.
// Figures only (issue 33's goal is 150 cases/s on 2 cores): nothing here asserts a time.
func BenchmarkExplore(b *testing.B) {
	sw, err := impl.ProfileSwitches(impl.Fixed)
	if err != nil {
		b.Fatal(err)
	}
	const cases = 300
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		o := Options{Profile: impl.Fixed, Defects: sw, Detectors: Both, Peers: true, Guide: NewGuide(),
			Scheduler: sim.Strategy{Kind: sim.PCT}}
		found, ran, err := Explore(o, cases, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		if found != nil || ran != cases {
			b.Fatalf("fixed, seed 1: %d of %d cases ran, finding %v", ran, cases, found != nil)
		}
	}
	b.ReportMetric(float64(cases*b.N)/time.Since(start).Seconds(), "cases/s")
}

// BenchmarkSimulatorSteps is the simulator's speed in scheduler steps per second over a quiet day.
func BenchmarkSimulatorSteps(b *testing.B) {
	var steps uint64
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		d := SimulateDay()
		steps += d.Steps
		wall += d.Wall
	}
	b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
}

// BenchmarkPorcupine10k checks a 10,000-operation history, partitioned per VM.
func BenchmarkPorcupine10k(b *testing.B) {
	for i := 0; i < b.N; i++ {
		CheckLargeHistory(10000)
	}
}

// TestShrinkingIsBoundedByRuns: the same seed shrinks to the same program, byte for byte, whether the
// machine is idle or busy. Shrinking was bounded by rapid's wall-clock shrinktime, and
// `explore --defects D3 --seed 1 --budget 100` shrank to 8, 8 (another program) and 2 actions in three
// runs (issue 33); a budget of runs cannot depend on the machine. Two goroutines spin beside the
// second exploration to make it a loaded one.
func TestShrinkingIsBoundedByRuns(t *testing.T) {
	tier.Need(t, tier.Long) // explores and shrinks twice: seconds
	o := Options{Profile: "D3", Defects: only(impl.D3)}
	explore := func() string {
		found, _, err := Explore(o, 100, 1, 300)
		if err != nil || found == nil {
			t.Fatalf("no finding (err %v)", err)
		}
		return found.Shrunk.Counterexample()
	}
	idle := explore()
	stop := make(chan struct{})
	var spinning sync.WaitGroup
	for range 2 {
		spinning.Add(1)
		go func() {
			defer spinning.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	busy := explore()
	close(stop)
	spinning.Wait()
	if idle != busy {
		t.Fatalf("the same seed shrank to two programs:\n%s\n---- loaded:\n%s", idle, busy)
	}
}
