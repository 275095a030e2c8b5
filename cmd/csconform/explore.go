package main

import (
	"context"
	"encoding/json"
	"errors"
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
	if o.seed == 0 {
		o.seed = rand.Uint64()
	}
	if o.driver != "sim" && o.driver != "container" {
		return fail(fmt.Errorf("unknown driver %q: explore runs on sim (default) or container", o.driver))
	}
	if err := checkDomains(o.domains); err != nil {
		return fail(err)
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	sum := &explore.Summary{Profile: o.profile, Defects: sw.On(), Seed: o.seed, Shard: o.shard, Budget: o.budget, Driver: o.driver}
	start := time.Now()
	done, shown := 0, -1
	tty := isTerminal(stderr)
	progress := func() {
		// a bar redrawn in place on a terminal; in a CI log, a line every 10%
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
	xo := explore.Options{Profile: o.profile, Defects: sw, Detectors: det, Driver: o.driver, Domains: o.domains, Ctx: ctx, Seen: func(out *explore.Outcome) {
		done++
		if det.Linear && len(out.Undecided) > 0 {
			sum.Undecided++ // never counted as linearizable
		}
		progress()
	}}
	shrink := time.Duration(0)
	if o.driver == "container" {
		shrink = 5 * time.Minute // a case takes a minute or two of real time
	}
	for k := 0; done < o.budget && !sum.Found; k++ {
		if k%sn != si {
			continue
		}
		n := min(chunk, o.budget-done)
		f, _, err := explore.Explore(xo, n, chunkSeed(o.seed, k), shrink)
		if errors.Is(err, explore.ErrInterrupted) {
			// what ran until Ctrl-C, then stop
			if !o.quiet && tty {
				fmt.Fprintln(stderr)
			}
			sum.Cases = done
			sum.WallSecs = time.Since(start).Seconds()
			fmt.Fprint(stdout, sum.Text())
			fmt.Fprintf(stderr, "csconform explore: interrupted after %d of %d cases\n", done, o.budget)
			return exitInterrupted
		}
		if err != nil {
			return fail(err)
		}
		if f != nil {
			done++ // Seen counts the cases before the failing one
			sum.Found, sum.Finding, sum.ReplaySeed = true, f, f.Seed
		}
	}
	if !o.quiet && tty {
		fmt.Fprintln(stderr)
	}
	sum.Cases = done
	sum.WallSecs = time.Since(start).Seconds()
	fmt.Fprint(stdout, sum.Text())
	if o.out != "" {
		if err := sum.WriteReports(o.out); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "reports in %s\n", o.out)
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
	var violations []history.Event
	for _, e := range events {
		if e.Kind == history.Violation {
			violations = append(violations, e)
		}
	}
	results := linear.Check(linear.Partitions(events), o.timeout)
	bad, undecided := linear.Illegal(results), linear.Undecided(results)
	if o.asJSON {
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
			fmt.Fprintf(stdout, "%d partitions undecided: no answer within %s each (--timeout raises it)\n", len(undecided), o.timeout)
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
		for _, r := range bad {
			if err := r.Visualize(filepath.Join(o.out, r.FileName())); err != nil {
				return fail(err)
			}
		}
	}
	return verdictExit(len(violations) > 0 || len(bad) > 0, len(undecided) > 0)
}

// benchCmd prints how fast each defect is found (each switched on alone), how fast the simulator runs
// and how long porcupine takes on a 10,000-operation history. Figures, never assertions.
func benchCmd(o *benchOpts, stdout, stderr io.Writer) int {
	if o.seeds < 1 || o.budget < 1 {
		fmt.Fprintln(stderr, "csconform bench: --seeds and --budget must be at least 1")
		return 2
	}
	det, ok := detectorNames[o.detectors]
	if !ok {
		fmt.Fprintf(stderr, "csconform bench: --detectors wants both, invariants or linear, got %q\n", o.detectors)
		return 2
	}
	fmt.Fprintf(stdout, "cases and wall time to the first finding (detectors: %s), each defect alone, %d seeds, budget %d:\n", o.detectors, o.seeds, o.budget)
	fmt.Fprintf(stdout, "%-32s %6s %13s %12s %13s %12s\n", "defect", "found", "median cases", "worst cases", "median time", "worst time")
	for _, d := range []string{"D1", "D2", "D3", "C1", "C2", impl.PlantedStopTimeoutIsSuccess} {
		sw, err := impl.ParseDefects(d)
		if err != nil { // the planted bug is no defect ParseDefects knows
			sw = impl.Switches{d: true}
		}
		var cases []int
		var secs []float64
		found := 0
		for s := 1; s <= o.seeds; s++ {
			t0 := time.Now()
			f, ran, err := explore.Explore(explore.Options{Profile: d, Defects: sw, Detectors: det}, o.budget, uint64(s)*7919, time.Millisecond)
			if err != nil {
				fmt.Fprintln(stderr, "csconform bench:", err)
				return 2
			}
			if f != nil {
				found++
				ran = f.Cases
			}
			cases = append(cases, ran)
			secs = append(secs, time.Since(t0).Seconds())
			fmt.Fprintf(stderr, "\r%s seed %d/%d", d, s, o.seeds)
		}
		fmt.Fprint(stderr, "\r                    \r")
		slices.Sort(cases)
		slices.Sort(secs)
		fmt.Fprintf(stdout, "%-32s %3d/%-2d %13d %12d %12.2fs %11.2fs\n", d, found, o.seeds, cases[len(cases)/2], cases[len(cases)-1], secs[len(secs)/2], secs[len(secs)-1])
	}
	day := explore.SimulateDay()
	fmt.Fprintf(stdout, "simulator: a 24 h day of a 3-host cluster in %.2f s, %d scheduler steps, %.0f steps/s\n", day.Wall.Seconds(), day.Steps, float64(day.Steps)/day.Wall.Seconds())
	ops, wall := explore.CheckLargeHistory(10000)
	fmt.Fprintf(stdout, "porcupine: a %d-operation history (%d VM partitions) checked in %.3f s\n", ops.Ops, ops.Partitions, wall.Seconds())
	return 0
}
