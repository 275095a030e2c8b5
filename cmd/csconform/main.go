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
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
)

const usage = `csconform finds orchestration races in CloudStack-style management servers.

Usage:
  csconform scenarios [--json]             list the built-in scenarios
  csconform scenarios show NAME            print a built-in scenario's file (a start for your own)
  csconform repro NAME|FILE|all [flags]    run scenarios and check the invariants
  csconform repro NAME|FILE --api URL --host N=URI ...
                                           the same against a real CloudStack (see below)
  csconform profiles                       list profiles and defect switches
  csconform faults                         list the faults a scenario can inject
  csconform config                         list the configuration keys and their defaults
  csconform explore [flags]                random programs with faults until a detector flags one
  csconform check FILE [flags]             re-check a saved history (JSON lines); exit 1 on a finding,
                                           3 if some object is undecided (see check flags)
  csconform logcheck FILE|DIR|- ...        judge CloudStack management-server.log files (rotated, .gz,
                                           several servers) with the log-decidable invariants and
                                           the porcupine models; exit 3 when nothing is decidable
                                           (csconform logcheck -h)
  csconform bench [flags]                  time to find each defect, simulator and checker speed
  csconform version                        the module version and VCS revision of this binary
  csconform mutants [run]                  the mutation catalogue; run (in a -tags mutants build)
                                           scores the detectors and exploration against it
  csconform server [flags]                 run the management server over TCP (csconform server -h)
  csconform agent --host ID --server ADDR  run one host's agent over TCP (csconform agent -h)
  csconform hypervisor --host ID --socket P  one host's simulated domains, for agents in containers
  csconform cleanup [--run ID] [--uri U]   remove what any run left (or one run's): containers,
                                           networks, volumes, images, domains and run files, and
                                           say what remains (exit 2 if anything does; cleanup -h)
  csconform audit --api URL --host N=URI   CloudStack's records (its API, or --db DSN: its MySQL)
                                           against the hosts' domains, read-only; exit 1 on damage
                                           (csconform audit -h)
  csconform inject FAULT [flags]           a time-boxed fault on staging hosts allowlisted by name or
                                           CloudStack tag; a dry run unless --yes (csconform inject -h)

repro flags:
  --profile P      cloudstack-4.22 (all known defects) or fixed (default cloudstack-4.22)
  --defects LIST   switch on exactly these defects instead (D1,D2a,...; D2 = D2a-D2e; none)
  --seed N         scheduler seed (default: each scenario's own)
  --driver NAME    where domains live: sim (default) or libvirt (real QEMU domains, real time;
                   needs ci/setup-libvirt.sh and ci/build-guest.sh; Ctrl-C cleans up)
                   or container (server and hosts in Docker containers built FROM scratch; any
                   scenario without primed networks, e.g. seed 004, 001 and
                   ms-restart-keeps-records; Ctrl-C heals faults and removes them and the run's
                   domains)
  --uri URI        libvirtd for --driver libvirt (default qemu:///system)
  --domains D      --driver container: auto (default: real libvirt domains, driven by the agent
                   containers through libvirtd's mounted socket, where libvirtd answers and the
                   guest is built; else simulated), libvirt (or fail) or simulated
  --json           print the results as JSON
  --history FILE   write the recorded history of the (last) run as JSON lines

repro against an external CloudStack (one scenario; nothing is started, no profile, seed or driver):
  --api URL        CloudStack's API, e.g. http://mgmt:8080/client/api
  --api-key K --secret-key S   else $CSCONFORM_API_KEY/$CSCONFORM_SECRET_KEY, else --api-keys-file F;
                   never printed or logged
  --zone Z, --service-offering O, --template T, --network-offering N
                   what to deploy with, id or name (default: the first usable ones listed)
  --host NAME=URI  a host (CloudStack's name) and where to read its domains: a libvirt URI, or
                   http://ADDR (csconform hypervisor --listen); repeatable. Or --hosts-from-api TEMPLATE
                   ({name}, {id}, {ip}). --domain-prefix P, --run ID as csconform audit has them
  --map-host h1=NAME   a scenario host is this CloudStack host (default: the same name)
  --expect PROFILE compare the outcome with the scenario's expectations for PROFILE
  --poll D         how often the records and domains are read (default 1s); --timeout D per request
  --insecure       do not verify the API's TLS certificate
  faults that need a host go through csconform inject, only with:
  --allow-host PATTERN (repeatable), --allow-vm PATTERN (crash), --max-targets N, --yes,
  --ssh-user U, --ssh-opt OPT, --ssh-target NAME=ADDR, or --local; --mgmt-port P (disconnect);
  --audit-log FILE (default csconform-inject.log)
  The run names what it creates csc-<run>-<name> and removes it all on exit, Ctrl-C included; a step
  it cannot do from outside (ms-restart, stale-report, setConfig, a primed network, a fault without
  host access...) is refused up front. Exit 2 also when the cleanup leaves something behind.

explore flags:
  --profile P, --defects LIST   as for repro (default profile fixed)
  --budget N       cases to run at most (default 1000)
  --seed N         where to start (default: random, printed); --seed N --budget 1 replays a finding
  --shard i/n      run the i-th of n disjoint slices of the seed space (a CI matrix)
  --detectors D    both (default), invariants or linear
  --driver NAME    sim (default) or container (server and hosts in Docker containers, real time,
                   a minute or two a case: use a small budget; invariants only)
  --domains D      --driver container: auto (default), libvirt or simulated, as for repro
  --out DIR        write summary.txt, result.json, junit.xml and, for a finding, history.jsonl,
                   counterexample.yaml and one porcupine HTML per failing partition
  --quiet          no progress bar

check flags:
  --timeout D      how long the linearizability checker may take per object (default 30s; 0: no
                   limit); an object it cannot decide in time is UNDECIDED (exit 3 if nothing else
                   is found)
  --max-input N    read at most N bytes (default 1GiB; KiB, MiB, GiB suffixes)
  --max-line N     refuse a line longer than N bytes (default 1MiB)
  --json           print the verdicts as JSON
  --out DIR        one porcupine HTML per partition that is not linearizable

bench flags:
  --seeds N        seeds per defect (default 20)
  --budget N       cases per seed at most (default 100)
  --detectors D    both (default), invariants or linear

Exit status: 0 nothing found and every expectation met, 1 a violation was found, 2 bad input or
a run stopped at a bound, 3 could not decide (the linearizability checker timed out on some object,
and nothing else was found; logcheck: nothing decidable), 4 an outcome that differs from the scenario's expectations, 130
interrupted.
`

// exitInterrupted is the status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as a shell has it).
const exitInterrupted = 130

// limitFlags are the bounds of a simulated run (harness.Limits).
type limitFlags struct {
	steps   *uint64
	simTime *time.Duration
}

func addLimitFlags(fs *pflag.FlagSet) limitFlags {
	return limitFlags{
		steps:   fs.Uint64("max-steps", harness.DefaultMaxSteps, "stop a simulated run after `N` scheduler steps"),
		simTime: fs.Duration("max-sim-time", harness.DefaultMaxSimTime, "stop a simulated run after `D` of simulated time (settle included)"),
	}
}

func (l limitFlags) limits(ctx context.Context) harness.Limits {
	return harness.Limits{Ctx: ctx, MaxSteps: *l.steps, MaxSimTime: *l.simTime}
}

// switches resolves --profile and --defects; with defects, the profile becomes "custom".
func switches(profile *string, defects string) (impl.Switches, error) {
	if defects != "" {
		*profile = "custom"
		return impl.ParseDefects(defects)
	}
	return impl.Profile(*profile)
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
	if err := checkDomains(o.domains); err != nil {
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
	var results []*harness.Result
	for i, sc := range scs {
		s := sc.Seed
		if o.seed != 0 {
			s = o.seed
		}
		if !o.asJSON && len(scs) > 1 {
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
			return 2
		}
		if err != nil {
			fmt.Fprintln(stderr, "csconform repro:", err)
			return 2
		}
		if o.historyFile != "" {
			if err := writeHistory(o.historyFile, r); err != nil {
				fmt.Fprintln(stderr, "csconform repro:", err)
				return 2
			}
		}
		r.Cluster = nil
		results = append(results, r)
		if !o.asJSON {
			epoch := sim.Epoch
			if o.driver != "sim" {
				epoch = r.Started // real time: count from the scenario's start
			}
			r.WriteText(stdout, epoch)
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			fmt.Fprintln(stderr, "csconform repro:", err)
			return 2
		}
	} else {
		fmt.Fprintln(stdout, summary(results))
	}
	return reproStatus(results)
}

// reproStatus is repro's exit status: an expectation not met (4) wins over a violation (1), so a
// profile whose expected violations stop showing fails the run instead of passing as "found"; a
// violation wins over an undecided object (3).
func reproStatus(rs []*harness.Result) int {
	found, undecided := false, false
	for _, r := range rs {
		if r.Expected && len(r.Mismatches) > 0 {
			return exitExpectation
		}
		found = found || len(r.Violations) > 0 || len(r.NotLinearizable) > 0
		undecided = undecided || len(r.Undecided) > 0
	}
	return verdictExit(found, undecided)
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

func writeHistory(path string, r *harness.Result) error {
	switch {
	case r.Cluster != nil:
		return history.WriteFile(path, r.Cluster.Rec.Events)
	case r.Rec != nil:
		return history.WriteFile(path, r.Rec.Events)
	}
	return errors.New("no history recorded")
}
