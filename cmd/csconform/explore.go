package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/explore"
	"github.com/csconform/csconform/harness/verdict"
	"github.com/csconform/csconform/internal/schema"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
)

var detectorNames = map[string]explore.Detectors{"both": explore.Both, "invariants": {Invariants: true}, "linear": {Linear: true}}

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
	if n > explore.MaxShards { // explore merge refuses more: refused here, before the run
		return 0, 0, fmt.Errorf("--shard %s: a run is split into %d shards at most", s, explore.MaxShards)
	}
	return i, n, nil
}

// exploreGCPercent is explore's garbage-collection target (GOGC), unless the environment sets one.
const exploreGCPercent = 400

// exploreCmd runs random programs with faults until a detector flags one, or the budget is spent.
func exploreCmd(o *exploreOpts, args []string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform explore:", err); return 2 }
	if len(args) > 0 {
		return fail(fmt.Errorf("unexpected argument %q", args[0]))
	}
	sw, err := switches(&o.profile, o.defects)
	if err != nil {
		return fail(err)
	}
	det, ok := detectorNames[o.detectors]
	if !ok {
		return fail(fmt.Errorf("--detectors wants both, invariants or linear, got %q", o.detectors))
	}
	if o.budget < 1 {
		return fail(fmt.Errorf("--budget must be at least 1"))
	}
	si, sn, err := parseShard(o.shard)
	if err != nil {
		return fail(err)
	}
	if sn > 1 && o.seed == 0 {
		// each shard would draw its own random seed: the shards would not slice one seed space
		return fail(fmt.Errorf("--shard needs --seed N, the same for every shard, so that the shards slice one seed space"))
	}
	if o.out != "" {
		if err := explore.CheckOutDir(o.out); err != nil {
			return fail(err)
		}
	}
	if o.marvin != "" {
		if _, err := os.Stat(o.marvin); err == nil {
			return fail(fmt.Errorf("--marvin %s exists: give a new file, so that an earlier run's test never passes for this one's", o.marvin))
		}
	}
	if o.report != "" {
		// as --out: an earlier run's report never passes for this one's
		if _, err := os.Stat(o.report); err == nil {
			return fail(fmt.Errorf("--report %s exists: give a new file, so that an earlier run's report never passes for this one's", o.report))
		} else if !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	if o.seed == 0 {
		o.seed = rand.Uint64()
	}
	if !slices.Contains(drivers, o.driver) {
		return fail(fmt.Errorf("unknown driver %q: explore runs in %s", o.driver, strings.Join(drivers, ", ")))
	}
	if err := checkDomains(o.domains); err != nil {
		return fail(err)
	}
	if o.driver != "sim" {
		if o.peers && o.peersSet {
			return fail(fmt.Errorf("--peers is the simulator's: several management servers run only there"))
		}
		o.peers = false
		if o.schedSet && o.sched.st.Kind != sim.Random {
			return fail(fmt.Errorf("--scheduler is the simulator's: --driver %s runs in real time", o.driver))
		}
		o.sched.st = sim.Strategy{}
	}
	// explore's live heap is small (tens of MB) and every case allocates a cloud, its history and its
	// checkers anew: at Go's default GOGC=100 the collector took about a fifth of explore's CPU. 400
	// trades some 30 MB of peak memory for it (docs/exploration.md); GOGC in the environment wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(exploreGCPercent)) // as it was after: explore runs in tests' processes too
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	sum := &explore.Summary{Profile: o.profile, Defects: sw.On(), Seed: o.seed, Shard: o.shard, Budget: o.budget, Driver: o.driver, Peers: o.peers}
	if o.sched.st.Kind != sim.Random {
		sum.Scheduler = o.sched.st.String()
	}
	start := time.Now()
	done, shown := 0, -1
	tty := isTerminal(stderr)
	progress := func(n int) {
		// a bar redrawn in place on a terminal; in a CI log, a line every 10%
		done = n
		pct := 100 * done / o.budget
		if o.quiet || pct == shown || (!tty && pct%10 != 0) {
			return
		}
		shown = pct
		w := 30 * done / o.budget
		line := fmt.Sprintf("[%s%s] %d/%d cases, %.0f s", strings.Repeat("#", w), strings.Repeat(" ", 30-w), done, o.budget, time.Since(start).Seconds())
		if tty {
			fmt.Fprint(stderr, "\r"+line)
		} else {
			fmt.Fprintln(stderr, line)
		}
	}
	// one guide for the whole run: coverage and feedback span the chunks
	xo := explore.Options{Profile: o.profile, Defects: sw, Detectors: det, Driver: o.driver, Domains: o.domains, Scheduler: o.sched.st, Peers: o.peers, Ctx: ctx, Guide: explore.NewGuide()}
	err = explore.RunBudget(xo, o.budget, o.seed, si, sn, sum, progress)
	if errors.Is(err, explore.ErrInterrupted) {
		// what ran until Ctrl-C, then stop
		if !o.quiet && tty {
			fmt.Fprintln(stderr)
		}
		fmt.Fprint(stdout, sum.Text())
		// the reports of what ran, marked interrupted: a CI timeout leaves its result.json and junit.xml
		if o.out != "" {
			if err := sum.WriteReports(o.out); err != nil {
				fmt.Fprintln(stderr, "csconform explore:", err)
			} else {
				fmt.Fprintf(stdout, "reports in %s\n", o.out)
			}
		}
		fmt.Fprintf(stderr, "csconform explore: interrupted after %d of %d cases\n", sum.Cases, o.budget)
		return exitInterrupted
	}
	if err != nil {
		return fail(err)
	}
	if !o.quiet && tty {
		fmt.Fprintln(stderr)
	}
	fmt.Fprint(stdout, sum.Text())
	if o.out != "" {
		if err := sum.WriteReports(o.out); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "reports in %s\n", o.out)
	}
	if o.report != "" {
		if !sum.Found {
			fmt.Fprintf(stdout, "no finding: no report written to %s\n", o.report)
		} else if err := os.WriteFile(o.report, []byte(sum.Markdown()), 0o644); err != nil {
			return fail(err)
		} else {
			fmt.Fprintf(stdout, "bug report in %s\n", o.report)
		}
	}
	if o.marvin != "" {
		if !sum.Found {
			fmt.Fprintf(stdout, "no finding: no Marvin test written to %s\n", o.marvin)
		} else if err := os.WriteFile(o.marvin, []byte(sum.Marvin()), 0o644); err != nil {
			return fail(err)
		} else {
			fmt.Fprintf(stdout, "Marvin test in %s\n", o.marvin)
		}
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

// checkCmd re-checks a saved history: the violations it records and the linearizability of each
// partition.
func checkCmd(o *checkOpts, args []string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform check:", err); return exitBadInput }
	if len(args) != 1 {
		return fail(fmt.Errorf("name one history file (JSON lines, as written by repro --history or explore --out)"))
	}
	if o.timeout < 0 {
		return fail(fmt.Errorf("--timeout must not be negative (0: no limit)"))
	}
	var lim history.Limits
	var err error
	if lim.MaxTotal, err = parseBytes(o.maxInput); err != nil {
		return fail(fmt.Errorf("--max-input: %v", err))
	}
	line, err := parseBytes(o.maxLine)
	if err != nil || line > 1<<30 {
		return fail(fmt.Errorf("--max-line: want a size up to 1GiB such as 65536 or 4MiB"))
	}
	lim.MaxLine = int(line)
	events, err := history.ReadFile(args[0], lim)
	if err != nil {
		return fail(err)
	}
	gcfg, err := guardSettings(o.settings, o.defaultSettings)
	if err != nil {
		return fail(err)
	}
	rc := verdict.Recheck(events, gcfg, o.timeout)
	violations, results, bad, undecided, gc := rc.Violations, rc.Results, rc.Bad, rc.Undecided, rc.Guards
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(checkDocument(len(events), results, violations, len(undecided)))
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
			fmt.Fprintf(stdout, "%d partitions undecided: no answer within %s each (--timeout raises it)\n", len(undecided), o.timeout)
		}
		for _, g := range slices.Sorted(maps.Keys(gc.Undecided)) {
			fmt.Fprintf(stdout, "NOT DECIDABLE %s for %d transition(s): %s\n", g, gc.Undecided[g], gc.Reasons[g])
		}
		switch {
		case len(violations) > 0 || len(bad) > 0:
		case len(undecided) > 0:
			fmt.Fprintln(stdout, "no violation recorded; the partitions decided are linearizable")
		default:
			fmt.Fprintln(stdout, "no violation recorded; every partition is linearizable")
		}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fail(err)
		}
		clock := harness.SeqClock(events, historyEpoch(events))
		for _, r := range bad {
			if err := r.VisualizeWith(filepath.Join(o.out, r.FileName()), linear.Visual{Clock: clock}); err != nil {
				return fail(err)
			}
		}
	}
	return verdictExit(len(violations) > 0 || len(bad) > 0, len(undecided) > 0)
}

// benchCmd prints how fast each defect is found (each switched on alone), how fast the simulator runs
// and how long porcupine takes on a 10,000-operation history. Figures, never assertions.
func benchCmd(o *benchOpts, stdout, stderr io.Writer) int {
	tty := isTerminal(stderr)
	if o.scaleRun > 0 {
		return runScaleOne(o.scaleRun, o.sf, o.profile, o.prof, stdout, stderr)
	}
	if o.scale != "" {
		return benchScale(o.scale, o.scaleRuns, o.sf, o.profile, o.prof, stdout, stderr)
	}
	if o.shrink < 0 || o.throughput < 0 {
		fmt.Fprintln(stderr, "csconform bench: --shrink and --throughput must not be negative")
		return 2
	}
	if o.seeds < 1 || o.budget < 1 {
		fmt.Fprintln(stderr, "csconform bench: --seeds and --budget must be at least 1")
		return 2
	}
	det, ok := detectorNames[o.detectors]
	if !ok {
		fmt.Fprintf(stderr, "csconform bench: --detectors wants both, invariants or linear, got %q\n", o.detectors)
		return 2
	}
	gen := "current"
	if o.classic {
		gen = "classic"
	}
	fmt.Fprintf(stdout, "cases and wall time to the first finding (detectors: %s, %s generator, scheduler: %s), each defect alone, %d seeds, budget %d:\n", o.detectors, gen, o.sched.st, o.seeds, o.budget)
	fmt.Fprintf(stdout, "%-32s %6s %13s %12s %13s %12s %9s %9s\n", "defect", "found", "median cases", "worst cases", "median time", "worst time", "not fixed", "shrunk")
	all := explore.BenchDefects()
	defects := all
	if o.only != "" {
		defects = strings.Split(o.only, ",")
		for _, d := range defects {
			if !slices.Contains(all, d) {
				fmt.Fprintf(stderr, "csconform bench: --defects takes %s, got %q\n", strings.Join(all, ", "), d)
				return 2
			}
		}
	}
	for _, d := range defects {
		progress := func(s int) {
			if tty { // progress redrawn in place only on a terminal: a CI log gets clean lines
				fmt.Fprintf(stderr, "\r%s seed %d/%d", d, s, o.seeds)
			}
		}
		ft, err := explore.TimeToFind(d, explore.Options{Detectors: det, Classic: o.classic, Scheduler: o.sched.st}, o.seeds, o.budget, o.shrink, progress)
		if err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return 2
		}
		if tty {
			fmt.Fprint(stderr, "\r"+strings.Repeat(" ", 60)+"\r")
		}
		cases, secs, shrunk := ft.Cases, ft.Secs, ft.Shrunk
		sh := "-"
		if len(shrunk) > 0 {
			sh = fmt.Sprintf("%d/%d", shrunk[len(shrunk)/2], shrunk[len(shrunk)-1])
		}
		fmt.Fprintf(stdout, "%-32s %3d/%-2d %13d %12d %12.2fs %11.2fs %6d/%-2d %9s\n", d, ft.Found, o.seeds, cases[len(cases)/2], cases[len(cases)-1], secs[len(secs)/2], secs[len(secs)-1], ft.Own, ft.Found, sh)
	}
	fmt.Fprintf(stdout, "(not fixed: of the findings, those whose shrunk program passes under fixed; shrunk: median/worst actions, shrinking with up to %d runs)\n", o.shrink)
	if o.throughput > 0 {
		classic, current, err := explore.CompareThroughput(o.throughput, 1)
		if err != nil {
			fmt.Fprintln(stderr, "csconform bench:", err)
			return 2
		}
		tp := [2]explore.Throughput{classic, current}
		fmt.Fprintf(stdout, "explore under fixed, %d cases with each generator in turns of 100, one run:\n", o.throughput)
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

// checkJSON is check --json's document.
type checkJSON struct {
	schema.Header
	Events     int              `json:"events"`
	Partitions []linear.Result  `json:"partitions"`
	Violations []checkViolation `json:"violations"`
	Undecided  int              `json:"undecided"`
}

// checkViolation is a recorded violation under the keys every document names one by, with the
// history event's own keys (kind, to, detail) kept for readers of the unversioned output.
type checkViolation struct {
	invariant.Violation
	Kind   string `json:"kind"`
	To     string `json:"to"`
	Detail string `json:"detail"`
}

func checkDocument(events int, results []linear.Result, vs []history.Event, undecided int) checkJSON {
	doc := checkJSON{Header: schema.New("check"), Events: events, Partitions: results, Undecided: undecided, Violations: []checkViolation{}}
	for _, e := range vs {
		doc.Violations = append(doc.Violations, checkViolation{
			Violation: invariant.Violation{Invariant: e.To, Object: e.Object, Time: e.Time, Message: e.Detail},
			Kind:      e.Kind, To: e.To, Detail: e.Detail})
	}
	return doc
}

// historyEpoch is where a saved history's clock counts from, as the run's reports counted: the
// simulator's epoch for a simulated run (its events fall within its bound of simulated time after
// it), the first event's time for a real one.
func historyEpoch(events []history.Event) time.Time {
	if len(events) == 0 {
		return sim.Epoch
	}
	if t := events[0].Time; !t.Before(sim.Epoch) && t.Sub(sim.Epoch) <= harness.DefaultMaxSimTime {
		return sim.Epoch
	}
	return events[0].Time
}
