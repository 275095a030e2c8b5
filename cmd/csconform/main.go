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
		r, err := runOn(ctx, o.driver, o.uri, o.domains, sc, o.profile, sw, s, o.lim.limits(ctx), stderr)
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
				line := judge(r, o.expectations)
				fmt.Fprintf(stdout, "%-9s %-*s  %s\n", line.status, width, r.Scenario, line.detail)
				if line.code != exitOK { // the details of what fails the run, and only those
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
		fmt.Fprintln(stdout, tally(results, o.expectations))
	} else {
		fmt.Fprintln(stdout, summary(results))
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

// verdict is one scenario's judgement: its status word and detail for the summary line, and the
// exit status it alone would give.
type verdict struct {
	status, detail string
	code           int
}

// judge is a scenario's verdict. A scenario whose expectations were checked is judged by them when
// gate is set (--expectations): the violations and non-linearizable objects its profile is known
// for are its expected outcome then, not a failure. Otherwise an unmet expectation (4) wins over a
// finding (1), which wins over an undecided object (3).
func judge(r *harness.Result, gate bool) verdict {
	var found []string
	seen := map[string]bool{}
	for _, v := range r.Violations {
		if !seen[v.Invariant] {
			seen[v.Invariant] = true
			found = append(found, v.Invariant)
		}
	}
	for _, l := range r.NotLinearizable {
		found = append(found, "not linearizable: "+l.Object)
	}
	var und []string
	for _, l := range r.Undecided {
		und = append(und, "undecided: "+l.Object)
	}
	what := strings.Join(append(found, und...), ", ")
	switch {
	case r.Expected && len(r.Mismatches) > 0:
		return verdict{"UNMET", strings.Join(r.Mismatches, "; "), exitExpectation}
	case r.Expected && gate:
		if what == "" {
			return verdict{"met", "as expected: nothing found", exitOK}
		}
		return verdict{"met", "as expected: " + what, exitOK}
	case len(found) > 0:
		return verdict{"FOUND", what, exitFound}
	case len(und) > 0:
		return verdict{"UNDECIDED", what, exitUndecided}
	case r.Expected:
		return verdict{"met", "as expected: nothing found", exitOK}
	}
	return verdict{"clean", "nothing found", exitOK}
}

// tally is --summary's last line: how many scenarios got each verdict, and the exit status's why.
func tally(rs []*harness.Result, gate bool) string {
	order := []string{"met", "clean", "UNMET", "FOUND", "UNDECIDED"}
	n := map[string]int{}
	for _, r := range rs {
		n[judge(r, gate).status]++
	}
	var parts []string
	for _, st := range order {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	return fmt.Sprintf("%d scenario(s): %s", len(rs), strings.Join(parts, ", "))
}

// reproStatus is repro's exit status, the worst of the scenarios' verdicts: an expectation not met
// (4) wins over a violation (1), so a profile whose expected violations stop showing fails the run
// instead of passing as "found"; a violation wins over an undecided object (3). With gate
// (--expectations), a scenario that met its expectations counts as 0 whatever it found.
func reproStatus(rs []*harness.Result, gate bool) int {
	rank := map[int]int{exitOK: 0, exitUndecided: 1, exitFound: 2, exitExpectation: 3}
	code := exitOK
	for _, r := range rs {
		if c := judge(r, gate).code; rank[c] > rank[code] {
			code = c
		}
	}
	return code
}

func summary(rs []*harness.Result) string {
	var unmet []string
	for _, r := range rs {
		if r.Expected && len(r.Mismatches) > 0 {
			unmet = append(unmet, fmt.Sprintf("%s under %s: %s", r.Scenario, r.Profile, strings.Join(r.Mismatches, "; ")))
		}
	}
	s := findings(rs)
	if len(unmet) > 0 {
		s += fmt.Sprintf("\nUNEXPECTED: %d scenario(s) did not meet their expectations:\n  %s", len(unmet), strings.Join(unmet, "\n  "))
	}
	return s
}

// findings is the summary's line about violations and linearizability.
func findings(rs []*harness.Result) string {
	n, bad := 0, 0
	var names []string
	for _, r := range rs {
		n += len(r.Violations) + len(r.NotLinearizable)
		if len(r.Violations) == 0 && len(r.NotLinearizable) == 0 {
			continue
		}
		bad++
		seen := map[string]bool{}
		for _, v := range r.Violations {
			if !seen[v.Invariant] {
				seen[v.Invariant] = true
				names = append(names, r.Scenario+": "+v.Invariant)
			}
		}
		for _, l := range r.NotLinearizable {
			names = append(names, r.Scenario+": not linearizable: "+l.Object)
		}
	}
	// an object the checker could not decide is named as such, never counted as linearizable
	var undecided []string
	for _, r := range rs {
		for _, l := range r.Undecided {
			undecided = append(undecided, r.Scenario+": "+l.Object)
		}
	}
	und := ""
	if len(undecided) > 0 {
		und = fmt.Sprintf("\n%d object(s) undecided (the linearizability checker timed out): not known to be linearizable:\n  %s", len(undecided), strings.Join(undecided, "\n  "))
	}
	if n == 0 {
		lin := ", every object's history linearizable"
		if len(undecided) > 0 {
			lin = ", every object's history decided linearizable"
		}
		for _, r := range rs {
			if !r.LinearChecked {
				lin = " (linearizability not checked: the world records no server history)"
			}
		}
		return fmt.Sprintf("%d scenario(s), no invariant violated%s%s", len(rs), lin, und)
	}
	return fmt.Sprintf("%d scenario(s), %d with findings (%d in all):\n  %s%s", len(rs), bad, n, strings.Join(names, "\n  "), und)
}

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
