// Command csconform reproduces CloudStack orchestration races in a deterministic simulator and checks
// the safety invariants on every step.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/verdict"
	"github.com/csconform/csconform/harness/world"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/schema"
	"github.com/csconform/csconform/model/history"
)

// exitInterrupted is the status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as a shell has it).
const exitInterrupted = 130

// limitFlags are the bounds and the scheduler of a simulated run (harness.Limits).
type limitFlags struct {
	steps   *uint64
	simTime *time.Duration
	sched   *strategyFlag
}

func addLimitFlags(fs *pflag.FlagSet) limitFlags {
	l := limitFlags{
		steps:   fs.Uint64("max-steps", harness.DefaultMaxSteps, "stop a simulated run after `N` scheduler steps (at least 1; a run stopped there exits 5)"),
		simTime: fs.Duration("max-sim-time", harness.DefaultMaxSimTime, "stop a simulated run after `D` of simulated time, settle included (above 0; a run stopped there exits 5)"),
		sched:   &strategyFlag{},
	}
	fs.Var(l.sched, "scheduler", "the simulator's strategy `S`: random (switches only where tasks block) or pct[:depth] (PCT: random priorities, depth-1 change points, preemption at every database read/write, lock and message; depth 8 by default)")
	return l
}

// check refuses a bound of 0: the harness reads 0 as its default, so --max-steps 0 would silently
// mean 20 million steps, not "none" and not "no bound".
func (l limitFlags) check() error {
	if *l.steps == 0 {
		return fmt.Errorf("--max-steps must be at least 1 (default %d); there is no unbounded run", harness.DefaultMaxSteps)
	}
	if *l.simTime <= 0 {
		return fmt.Errorf("--max-sim-time must be above 0 (default %s); there is no unbounded run", harness.DefaultMaxSimTime)
	}
	return nil
}

func (l limitFlags) limits(ctx context.Context) harness.Limits {
	return harness.Limits{Ctx: ctx, MaxSteps: *l.steps, MaxSimTime: *l.simTime, Scheduler: l.sched.st}
}

// strategyFlag is --scheduler: a bad value is the flag package's clear error (exit 2).
type strategyFlag struct{ st sim.Strategy }

func (f *strategyFlag) String() string { return f.st.String() }
func (f *strategyFlag) Type() string   { return "strategy" }
func (f *strategyFlag) Set(s string) error {
	st, err := sim.ParseStrategy(s)
	if err != nil {
		return err
	}
	f.st = st
	return nil
}

// switches resolves --profile and --defects; with defects, the profile becomes "custom".
func switches(profile *string, defects string) (impl.Switches, error) {
	if defects != "" {
		*profile = "custom"
		return impl.ParseDefects(defects)
	}
	return impl.ProfileSwitches(*profile)
}

func orNone(x []string) []string {
	if len(x) == 0 {
		return []string{"none"}
	}
	return x
}

// repro runs the named scenario (or all, or a scenario file) and prints the table and each
// violation; set names the flags given on the command line.
func repro(o *reproOpts, args []string, set map[string]bool, stdout, stderr io.Writer) int {
	names := args
	if len(names) != 1 {
		fmt.Fprintln(stderr, "csconform repro: name one scenario (or all)")
		return 2
	}
	if *o.ext.api != "" {
		return reproExternalCmd(o.ext, set, names[0], o.asJSON, o.historyFile, stdout, stderr)
	}
	for _, n := range externalOnly {
		if set[n] {
			fmt.Fprintf(stderr, "csconform repro: --%s is for a run against an external CloudStack: give --api URL\n", n)
			return 2
		}
	}
	if !slices.Contains(drivers, o.driver) {
		fmt.Fprintf(stderr, "csconform repro: unknown driver %q (known: %s)\n", o.driver, strings.Join(drivers, ", "))
		return 2
	}
	if o.driver != "sim" && o.lim.sched.st.Kind != sim.Random {
		fmt.Fprintf(stderr, "csconform repro: --scheduler is the simulator's: --driver %s runs in real time\n", o.driver)
		return 2
	}
	if err := checkDomains(o.domains); err != nil {
		fmt.Fprintln(stderr, "csconform repro:", err)
		return 2
	}
	if err := o.lim.check(); err != nil {
		fmt.Fprintln(stderr, "csconform repro:", err)
		return 2
	}
	ctx, stop := reproContext()
	defer stop()
	sw, err := switches(&o.profile, o.defects)
	if err != nil {
		fmt.Fprintln(stderr, "csconform repro:", err)
		return 2
	}
	var scs []*harness.Scenario
	if names[0] == "all" {
		scs, err = conformance.Builtin()
	} else {
		var sc *harness.Scenario
		sc, err = conformance.Find(names[0])
		scs = []*harness.Scenario{sc}
	}
	if err != nil {
		fmt.Fprintln(stderr, "csconform repro:", err)
		return 2
	}
	if o.summary && o.asJSON {
		fmt.Fprintln(stderr, "csconform repro: --summary is a text report: give it or --json, not both")
		return 2
	}
	if o.expectations && o.defects != "" {
		fmt.Fprintln(stderr, "csconform repro: --expectations gates on a profile's expectations: --defects checks none (give --profile)")
		return 2
	}
	width := 0 // the summary's name column
	for _, sc := range scs {
		width = max(width, len(sc.Name))
	}
	var results []*harness.Result
	for i, sc := range scs {
		s := sc.Seed
		if o.seed != 0 {
			s = o.seed
		}
		if !o.asJSON && !o.summary && len(scs) > 1 {
			fmt.Fprintf(stderr, "[%d/%d] %s\n", i+1, len(scs), sc.Name)
		}
		r, err := world.Run(o.driver, sc, harness.RunOptions{Profile: o.profile, Defects: sw, Seed: s, Ctx: ctx, Log: stderr, Limits: o.lim.limits(ctx), URI: o.uri, Domains: o.domains})
		var stopped *harness.StoppedError
		if errors.As(err, &stopped) {
			// what the run had until it stopped, then why it stopped
			if r != nil && !o.asJSON {
				r.WriteText(stdout, sim.Epoch)
			}
			fmt.Fprintln(stderr, "csconform repro:", err)
			if stopped.Interrupted {
				return exitInterrupted
			}
			return exitStopped
		}
		if err != nil {
			fmt.Fprintln(stderr, "csconform repro:", err)
			return 2
		}
		if o.historyFile != "" {
			if err := writeHistory(historyPath(o.historyFile, sc.Name, len(scs)), r); err != nil {
				fmt.Fprintln(stderr, "csconform repro:", err)
				return 2
			}
		}
		r.Rec = nil // each scenario's records and history go once reported
		results = append(results, r)
		if !o.asJSON {
			epoch := sim.Epoch
			if o.driver != "sim" {
				epoch = r.Started // real time: count from the scenario's start
			}
			if o.summary {
				line := verdict.Of(r, o.expectations)
				fmt.Fprintf(stdout, "%-9s %-*s  %s\n", line.Status, width, r.Scenario, line.Detail)
				if line.Outcome != verdict.OK { // the details of what fails the run, and only those
					r.WriteText(stdout, epoch)
				}
			} else {
				r.WriteText(stdout, epoch)
			}
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reproDocument(results)); err != nil {
			fmt.Fprintln(stderr, "csconform repro:", err)
			return 2
		}
	} else if o.summary {
		fmt.Fprintln(stdout, verdict.Tally(results, o.expectations))
	} else {
		fmt.Fprintln(stdout, verdict.Summary(results))
	}
	return reproStatus(results, o.expectations)
}

// reproJSON is repro --json's document: the header, then each scenario's result.
type reproJSON struct {
	schema.Header
	Results []*harness.Result `json:"results"`
}

func reproDocument(rs []*harness.Result) reproJSON {
	return reproJSON{Header: schema.New("repro"), Results: rs}
}

// exitOf is repro's exit status for a run's worst outcome.
var exitOf = map[verdict.Outcome]int{verdict.OK: exitOK, verdict.Undecided: exitUndecided, verdict.Found: exitFound, verdict.Unmet: exitExpectation}

// reproStatus is repro's exit status, the worst of the scenarios' verdicts (verdict.Worst).
func reproStatus(rs []*harness.Result, gate bool) int { return exitOf[verdict.Worst(rs, gate)] }

// historyPath is where --history FILE puts a scenario's history: FILE itself for one scenario, and
// FILE with the scenario's name before its extension for several (repro all), one file each.
func historyPath(file, scenario string, n int) string {
	if n <= 1 {
		return file
	}
	ext := filepath.Ext(file)
	return strings.TrimSuffix(file, ext) + "." + scenario + ext
}

func writeHistory(path string, r *harness.Result) error {
	if r.Rec == nil {
		return errors.New("no history recorded")
	}
	return history.WriteFileSeq(path, r.Rec.History().All())
}
