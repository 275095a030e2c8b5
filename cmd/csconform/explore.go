package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness/explore"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/linear"
)

var detectorNames = map[string]explore.Detectors{"both": explore.Both, "invariants": {Invariants: true}, "linear": {Linear: true}}

// chunk is how many cases one rapid run covers; a shard takes every n-th chunk.
const chunk = 100

// chunkSeed is the rapid seed of chunk k: k = 0 is the seed itself, so --seed N --budget 1 replays
// the case rapid reported as N.
func chunkSeed(seed uint64, k int) uint64 {
	if k == 0 {
		return seed
	}
	return rand.New(rand.NewPCG(seed, uint64(k))).Uint64()
}

func parseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard wants i/n with 0 <= i < n, got %q", s)
	}
	return i, n, nil
}

func exploreCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "fixed", "")
	defects := fs.String("defects", "", "")
	budget := fs.Int("budget", 1000, "")
	seed := fs.Uint64("seed", 0, "")
	shard := fs.String("shard", "", "")
	detectors := fs.String("detectors", "both", "")
	out := fs.String("out", "", "")
	quiet := fs.Bool("quiet", false, "")
	driver := fs.String("driver", "sim", "")
	domains := fs.String("domains", container.DomainsAuto, "")
	// PCT by default: the fixed profile stays clean under it (1000 cases on seeds 1, 2, 3) and it
	// reaches check-then-act interleavings the random strategy cannot.
	sched := &strategyFlag{st: sim.Strategy{Kind: sim.PCT}}
	fs.Var(sched, "scheduler", "")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform explore:", err); return 2 }
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	sw, err := switches(profile, *defects)
	if err != nil {
		return fail(err)
	}
	det, ok := detectorNames[*detectors]
	if !ok {
		return fail(fmt.Errorf("--detectors wants both, invariants or linear, got %q", *detectors))
	}
	if *budget < 1 {
		return fail(fmt.Errorf("--budget must be at least 1"))
	}
	si, sn, err := parseShard(*shard)
	if err != nil {
		return fail(err)
	}
	if *seed == 0 {
		*seed = rand.Uint64()
	}
	if *driver != "sim" && *driver != "container" {
		return fail(fmt.Errorf("unknown driver %q: explore runs on sim (default) or container", *driver))
	}
	if err := checkDomains(*domains); err != nil {
		return fail(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *driver != "sim" {
		if set["scheduler"] && sched.st.Kind != sim.Random {
			return fail(fmt.Errorf("--scheduler is the simulator's: --driver %s runs in real time", *driver))
		}
		sched.st = sim.Strategy{}
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	sum := &explore.Summary{Profile: *profile, Defects: sw.On(), Seed: *seed, Shard: *shard, Budget: *budget, Driver: *driver}
	if sched.st.Kind != sim.Random {
		sum.Scheduler = sched.st.String()
	}
	start := time.Now()
	done, shown := 0, -1
	tty := isTerminal(stderr)
	progress := func() {
		// a bar redrawn in place on a terminal; in a CI log, a line every 10%
		pct := 100 * done / *budget
		if *quiet || pct == shown || (!tty && pct%10 != 0) {
			return
		}
		shown = pct
		w := 30 * done / *budget
		line := fmt.Sprintf("[%s%s] %d/%d cases, %.0f s", strings.Repeat("#", w), strings.Repeat(" ", 30-w), done, *budget, time.Since(start).Seconds())
		if tty {
			fmt.Fprint(stderr, "\r"+line)
		} else {
			fmt.Fprintln(stderr, line)
		}
	}
	guide := explore.NewGuide() // one for the whole run: coverage and feedback span the chunks
	coverage := func() {
		if *driver != "container" {
			sum.Coverage = guide.Coverage.Summary()
		}
	}
	o := explore.Options{Profile: *profile, Defects: sw, Detectors: det, Driver: *driver, Domains: *domains, Scheduler: sched.st, Ctx: ctx, Guide: guide, Seen: func(out *explore.Outcome) {
		done++
		if det.Linear && len(out.Undecided) > 0 {
			sum.Undecided++ // never counted as linearizable
		}
		progress()
	}}
	shrink := time.Duration(0)
	if *driver == "container" {
		shrink = 5 * time.Minute // a case takes a minute or two of real time
	}
	for k := 0; done < *budget && !sum.Found; k++ {
		if k%sn != si {
			continue
		}
		n := min(chunk, *budget-done)
		f, _, err := explore.Explore(o, n, chunkSeed(*seed, k), shrink)
		if errors.Is(err, explore.ErrInterrupted) {
			// what ran until Ctrl-C, then stop
			if !*quiet && tty {
				fmt.Fprintln(stderr)
			}
			sum.Cases = done
			sum.WallSecs = time.Since(start).Seconds()
			coverage()
			fmt.Fprint(stdout, sum.Text())
			fmt.Fprintf(stderr, "csconform explore: interrupted after %d of %d cases\n", done, *budget)
			return exitInterrupted
		}
		if err != nil {
			return fail(err)
		}
		if f != nil {
			done++         // Seen counts the cases before the failing one
			f.Cases = done // Explore counts within its chunk; the run, from its start
			sum.Found, sum.Finding, sum.ReplaySeed = true, f, f.Seed
		}
	}
	if !*quiet && tty {
		fmt.Fprintln(stderr)
	}
	sum.Cases = done
	sum.WallSecs = time.Since(start).Seconds()
	coverage()
	fmt.Fprint(stdout, sum.Text())
	if *out != "" {
		if err := sum.WriteReports(*out); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "reports in %s\n", *out)
	}
	return verdictExit(sum.Found, sum.Undecided > 0)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseBytes reads a size: a number of bytes, or one with a KiB, MiB or GiB suffix.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a size such as 1048576, 512MiB or 2GiB")
	}
	return n * mult, nil
}

func checkCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "")
	asJSON := fs.Bool("json", false, "")
	timeout := fs.Duration("timeout", 30*time.Second, "")
	maxInput := fs.String("max-input", "1GiB", "")
	maxLine := fs.String("max-line", "1MiB", "")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform check:", err); return exitBadInput }
	if fs.NArg() != 1 {
		return fail(fmt.Errorf("name one history file (JSON lines, as written by repro --history or explore --out)"))
	}
	if *timeout < 0 {
		return fail(fmt.Errorf("--timeout must not be negative (0: no limit)"))
	}
	var lim history.Limits
	var err error
	if lim.MaxTotal, err = parseBytes(*maxInput); err != nil {
		return fail(fmt.Errorf("--max-input: %v", err))
	}
	line, err := parseBytes(*maxLine)
	if err != nil || line > 1<<30 {
		return fail(fmt.Errorf("--max-line: want a size up to 1GiB such as 65536 or 4MiB"))
	}
	lim.MaxLine = int(line)
	events, err := history.ReadFile(fs.Arg(0), lim)
	if err != nil {
		return fail(err)
	}
	var violations []history.Event
	for _, e := range events {
		if e.Kind == history.Violation {
			violations = append(violations, e)
		}
	}
	results := linear.Check(linear.Partitions(events), *timeout)
	bad, undecided := linear.Illegal(results), linear.Undecided(results)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"events": len(events), "partitions": results, "violations": violations, "undecided": len(undecided)})
	} else {
		fmt.Fprintf(stdout, "%d events, %d partitions checked\n", len(events), len(results))
		for _, v := range violations {
			fmt.Fprintf(stdout, "INVARIANT %s on %s: %s\n", v.To, v.Object, v.Detail)
		}
		for _, r := range bad {
			fmt.Fprintf(stdout, "NOT LINEARIZABLE %s (%d operations):\n%s\n", r.Object, r.Ops, strings.Join(r.Explain, "\n"))
		}
		for _, r := range undecided {
			fmt.Fprintf(stdout, "UNDECIDED %s (%d operations): the checker timed out\n", r.Object, r.Ops)
		}
		// undecided is neither linearizable nor not: it gets its own line, never "linearizable"
		if len(undecided) > 0 {
			fmt.Fprintf(stdout, "%d partitions undecided: no answer within %s each (--timeout raises it)\n", len(undecided), *timeout)
		}
		switch {
		case len(violations) > 0 || len(bad) > 0:
		case len(undecided) > 0:
			fmt.Fprintln(stdout, "no violation recorded; the partitions decided are linearizable")
		default:
			fmt.Fprintln(stdout, "no violation recorded; every partition is linearizable")
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fail(err)
		}
		for _, r := range bad {
			if err := r.Visualize(filepath.Join(*out, r.FileName())); err != nil {
				return fail(err)
			}
		}
	}
	return verdictExit(len(violations) > 0 || len(bad) > 0, len(undecided) > 0)
}

// benchCmd prints how fast each defect is found (each switched on alone), how fast the simulator runs
// and how long porcupine takes on a 10,000-operation history. Figures, never assertions.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", 20, "")
	budget := fs.Int("budget", 100, "")
	detectors := fs.String("detectors", "both", "")
	scale := fs.String("scale", "", "")
	scaleRun := fs.Int("scale-run", 0, "") // one size, in this process (the bench's child)
	profile := fs.String("profile", "fixed", "")
	cpuprofile := fs.String("cpuprofile", "", "")
	sf := addScaleFlags(fs)
	shrink := fs.Duration("shrink", time.Millisecond, "")
	throughput := fs.Int("throughput", 1000, "")
	only := fs.String("defects", "", "")
	classicGen := fs.Bool("classic", false, "")
	sched := &strategyFlag{}
	fs.Var(sched, "scheduler", "")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "csconform bench: unexpected %q\n", fs.Arg(0))
		return 2
	}
	if *scaleRun > 0 {
		return runScaleOne(*scaleRun, sf, *profile, *cpuprofile, stdout, stderr)
	}
	if *scale != "" {
		return benchScale(*scale, sf, *profile, *cpuprofile, stdout, stderr)
	}
	if *shrink <= 0 || *throughput < 0 {
		fmt.Fprintln(stderr, "csconform bench: --shrink must be positive and --throughput not negative")
		return 2
	}
	if *seeds < 1 || *budget < 1 {
		fmt.Fprintln(stderr, "csconform bench: --seeds and --budget must be at least 1")
		return 2
	}
	det, ok := detectorNames[*detectors]
	if !ok {
		fmt.Fprintf(stderr, "csconform bench: --detectors wants both, invariants or linear, got %q\n", *detectors)
		return 2
	}
	gen := "current"
	if *classicGen {
		gen = "classic"
	}
	fmt.Fprintf(stdout, "cases and wall time to the first finding (detectors: %s, %s generator, scheduler: %s), each defect alone, %d seeds, budget %d:\n", *detectors, gen, sched.st, *seeds, *budget)
	fmt.Fprintf(stdout, "%-32s %6s %13s %12s %13s %12s %9s %9s\n", "defect", "found", "median cases", "worst cases", "median time", "worst time", "not fixed", "shrunk")
	fixed, _ := impl.Profile("fixed")
	defects := []string{"D1", "D2", "D3", "C1", "C2", impl.PlantedStopTimeoutIsSuccess, impl.PlantedIPFromStaleRead}
	if *only != "" {
		defects = strings.Split(*only, ",")
		for _, d := range defects {
			if !slices.Contains([]string{"D1", "D2", "D3", "C1", "C2", impl.PlantedStopTimeoutIsSuccess, impl.PlantedIPFromStaleRead}, d) {
				fmt.Fprintf(stderr, "csconform bench: --defects takes D1, D2, D3, C1, C2, %s and %s, got %q\n", impl.PlantedStopTimeoutIsSuccess, impl.PlantedIPFromStaleRead, d)
				return 2
			}
		}
	}
	for _, d := range defects {
		sw, err := impl.ParseDefects(d)
		if err != nil { // the planted bug is no defect ParseDefects knows
			sw = impl.Switches{d: true}
		}
		var cases, shrunk []int
		var secs []float64
		found, own := 0, 0
		for s := 1; s <= *seeds; s++ {
			t0 := time.Now()
			f, ran, err := explore.Explore(explore.Options{Profile: d, Defects: sw, Detectors: det, Classic: *classicGen, Scheduler: sched.st}, *budget, uint64(s)*7919, *shrink)
			if err != nil {
				fmt.Fprintln(stderr, "csconform bench:", err)
				return 2
			}
			if f != nil {
				found++
				ran = f.Cases
				shrunk = append(shrunk, f.Shrunk.Actions)
				// the defect's own finding: its shrunk program passes once the defects are fixed (the
				// fixed reference has races of its own that a program can stumble on first)
				if again, err := explore.Run(f.Shrunk.Program, explore.Options{Profile: "fixed", Defects: fixed}); err == nil && !again.Failed(det) {
					own++
				}
			}
			cases = append(cases, ran)
			secs = append(secs, time.Since(t0).Seconds())
			fmt.Fprintf(stderr, "\r%s seed %d/%d", d, s, *seeds)
		}
		fmt.Fprint(stderr, "\r                    \r")
		slices.Sort(cases)
		slices.Sort(secs)
		slices.Sort(shrunk)
		sh := "-"
		if len(shrunk) > 0 {
			sh = fmt.Sprintf("%d/%d", shrunk[len(shrunk)/2], shrunk[len(shrunk)-1])
		}
		fmt.Fprintf(stdout, "%-32s %3d/%-2d %13d %12d %12.2fs %11.2fs %6d/%-2d %9s\n", d, found, *seeds, cases[len(cases)/2], cases[len(cases)-1], secs[len(secs)/2], secs[len(secs)-1], own, found, sh)
	}
	fmt.Fprintf(stdout, "(not fixed: of the findings, those whose shrunk program passes under fixed; shrunk: median/worst actions, shrinking up to %s)\n", *shrink)
	if *throughput > 0 {
		classic, current, err := explore.CompareThroughput(*throughput, 1)
		if err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return 2
		}
		tp := [2]explore.Throughput{classic, current}
		fmt.Fprintf(stdout, "explore under fixed, %d cases with each generator in turns of 100, one run:\n", *throughput)
		for i, name := range []string{"classic", "swarm + config + multi-NIC + guide"} {
			fmt.Fprintf(stdout, "  %-34s %7.1f cases/s, %s\n", name, tp[i].CasesPerSecond(), tp[i].Coverage.Text())
		}
		fmt.Fprintf(stdout, "  new/classic: %.2f of the speed (%.2fx the time per case)\n", tp[1].CasesPerSecond()/tp[0].CasesPerSecond(), tp[0].CasesPerSecond()/tp[1].CasesPerSecond())
	}
	day := explore.SimulateDay()
	fmt.Fprintf(stdout, "simulator: a 24 h day of a 3-host cluster in %.2f s, %d scheduler steps, %.0f steps/s\n", day.Wall.Seconds(), day.Steps, float64(day.Steps)/day.Wall.Seconds())
	ops, wall := explore.CheckLargeHistory(10000)
	fmt.Fprintf(stdout, "porcupine: a %d-operation history (%d VM partitions) checked in %.3f s\n", ops.Ops, ops.Partitions, wall.Seconds())
	return 0
}
