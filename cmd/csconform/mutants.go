package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/explore"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/mutation"
	"github.com/csconform/csconform/internal/schema"
)

// listMutants prints the mutation catalogue.
func listMutants(stdout io.Writer) int {
	for _, m := range impl.Mutants {
		fmt.Fprintf(stdout, "%-46s %-44s %s\n", m.ID, m.Method, m.Summary)
	}
	return 0
}

// mutantsRun scores the detectors and exploration against the mutation catalogue.
func mutantsRun(f *mutantsOpts, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform mutants:", err); return 2 }
	if !impl.MutantsBuilt() {
		return fail(fmt.Errorf("this binary has no mutation points: go run -tags mutants ./cmd/csconform mutants run"))
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return fail(err)
	}
	o := explore.MutationOptions{Budget: f.budget, Scheduler: f.sched.st, Seeds: seeds, Peers: f.peers}
	if f.only != "" {
		for _, id := range strings.Split(f.only, ",") {
			m := impl.Mutant(strings.TrimSpace(id))
			if err := impl.SetMutant(m); err != nil {
				return fail(err)
			}
			o.Only = append(o.Only, m)
		}
		_ = impl.SetMutant("")
	}
	if o.Scenarios, err = oracleScenarios(); err != nil {
		return fail(err)
	}
	// a line per mutant as it is judged (a long run shows its progress), then the score
	rs, err := explore.MutationScore(o, func(r explore.MutantResult) { fmt.Fprint(stdout, explore.MutantLine(r)) })
	if err != nil {
		return fail(err)
	}
	fmt.Fprint(stdout, explore.ScoreLine(rs, o))
	return 0
}

// raceFiles are impl/'s race paths, the files `mutants sample` mutates: the start, stop, migration,
// HA, job, network, power-sync and agent paths and the store's compare-and-set updates. Left out:
// the catalogue, the defect switches, configuration, errors' definitions, the state file
// (persist.go, never reached by a simulated run) and the simulator's mocks.
var raceFiles = []string{"agent.go", "agent_ha.go", "agentmgr.go", "api.go", "cluster.go", "ha.go", "hawork.go",
	"investigate.go", "itwork.go", "jobs.go", "messagebus.go", "migrate.go", "network.go", "powersync.go",
	"resource.go", "server.go", "store.go", "vmm.go"}

// mutantEnum is what is not worth mutating in impl, since it is not CloudStack's behaviour but the
// reference's instrumentation: a call that only logs; the store's emit, which tells the recorder
// what happened (deleting it blinds the detectors, it does not change what the server does); point,
// the simulator's scheduling point (deleting one removes interleavings, not behaviour); touch, which
// only marks a row for the state file of `csconform server --state` (no simulated run writes one;
// the durability tests judge it); and the catalogue's mutated(), a constant false in an ordinary
// build.
var mutantEnum = mutation.Options{Quiet: []string{"Log", "log", "logText", "emit", "Emit", "point", "touch"}, Frozen: "mutated"}

// oracleScenarios are the built-ins a mutant is judged by: all but the load scenarios (hundreds of
// concurrent deploys), which test the reference's scale and at 5 s a run would cost more than each
// mutant's exploration.
func oracleScenarios() ([]*harness.Scenario, error) {
	all, err := conformance.Builtin()
	if err != nil {
		return nil, err
	}
	var out []*harness.Scenario
	for _, sc := range all {
		if !strings.HasPrefix(sc.Name, "load-") {
			out = append(out, sc)
		}
	}
	return out, nil
}

func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("--seeds wants positive integers, got %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// mutantsOracle is the verdict of this binary's reference (a mechanical mutant's build): repro all
// under both profiles against their expectations, then explore under fixed; an exploration finding
// counts only if the baseline binary, replaying its case, does not make it too. It prints the
// verdict as one JSON line.
func mutantsOracle(f *mutantsOpts, baseline string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform mutants oracle:", err); return 2 }
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return fail(err)
	}
	scs, err := oracleScenarios()
	if err != nil {
		return fail(err)
	}
	// explore as a user runs it: with its default --peers, which the baseline's replay names too (a
	// case's program depends on it)
	o := explore.MutationOptions{Scenarios: scs, Profiles: []string{impl.Fixed, impl.CloudStack422}, Budget: f.budget, Seeds: seeds, Scheduler: f.sched.st, Peers: true}
	own := func(fd *explore.Finding) (bool, error) {
		if baseline == "" {
			return true, nil
		}
		cmd := exec.Command(baseline, "explore", "--profile", impl.Fixed, "--scheduler", f.sched.String(), "--peers=true",
			"--seed", strconv.FormatUint(fd.Seed, 10), "--budget", "1", "--quiet")
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return true, nil // the unmutated reference passes this case
		case errors.As(err, &ee) && ee.ExitCode() == exitFound:
			return false, nil
		}
		return false, fmt.Errorf("the baseline's replay of case %d: %v", fd.Seed, err)
	}
	by, detail, err := explore.Judge(o, own)
	if err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(mutation.Verdict{KilledBy: by, Detail: detail})
	fmt.Fprintln(stdout, string(b))
	return 0
}

// sampleOpts are the flags of mutants sample.
type sampleOpts struct {
	mutantsOpts
	seed     uint64
	witness  bool
	jsonOut  string
	src      string
	bound    time.Duration
	listOnly bool
	ids      string
	show     bool
}

// mutantsSample draws mechanical mutants of impl's race paths and judges each by the oracle, with the
// unit tests as a witness.
func mutantsSample(n int, f *sampleOpts, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform mutants sample:", err); return 2 }
	if n <= 0 {
		return fail(fmt.Errorf("N must be a positive number of mutants, got %d", n))
	}
	if _, err := parseSeeds(f.seeds); err != nil {
		return fail(err)
	}
	root, err := moduleRoot(f.src)
	if err != nil {
		return fail(err)
	}
	files := make([]string, len(raceFiles))
	abs := make([]string, len(raceFiles))
	for i, r := range raceFiles {
		files[i] = filepath.Join("impl", r)
		abs[i] = filepath.Join(root, files[i])
	}
	var ids []string
	if f.ids != "" {
		for _, id := range strings.Split(f.ids, ",") {
			ids = append(ids, strings.TrimSpace(id))
		}
	}
	switch {
	case f.listOnly:
		all, err := mutation.Enumerate(abs, mutantEnum)
		if err != nil {
			return fail(err)
		}
		count := map[mutation.Operator]int{}
		for _, m := range all {
			count[m.Op]++
		}
		fmt.Fprintf(stdout, "%d mutation points in %d files of impl/:", len(all), len(files))
		for _, op := range mutation.Operators {
			fmt.Fprintf(stdout, " %s %d;", op, count[op])
		}
		fmt.Fprintln(stdout)
		return 0
	case f.show:
		if len(ids) == 0 {
			return fail(fmt.Errorf("--show needs --ids"))
		}
		ms, err := mutation.Find(abs, mutantEnum, ids)
		if err != nil {
			return fail(err)
		}
		for _, m := range ms {
			src, err := os.ReadFile(m.File)
			if err != nil {
				return fail(err)
			}
			m.File, _ = filepath.Rel(root, m.File)
			fmt.Fprint(stdout, mutation.Diff(src, m))
		}
		return 0
	}
	work, err := os.MkdirTemp("", "csconform-mutants-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(work)
	ctx, stop := reproContext()
	defer stop()
	oracle := []string{"mutants", "oracle", "--budget", strconv.Itoa(f.budget), "--seeds", f.seeds, "--scheduler", f.sched.String()}
	o := mutation.SampleOptions{Root: root, Files: files, Enum: mutantEnum, N: n, Seed: f.seed, IDs: ids, Main: "./cmd/csconform",
		Oracle: oracle, Bound: f.bound, Work: work, Ctx: ctx,
		Progress: func(i int, r mutation.Result) { fmt.Fprint(stdout, mutation.Line(i, r)) }}
	what := fmt.Sprintf("oracle: repro all under fixed and cloudstack-4.22 + explore --profile fixed --budget %d, seeds %s, scheduler %s, peers on", f.budget, f.seeds, f.sched)
	if f.witness {
		o.Witness = []string{"./impl/..."}
		what += "; witness: go test ./impl/..."
	}
	if len(ids) > 0 {
		fmt.Fprintf(stdout, "judging %d given mutants of impl/'s race paths (%s)\n", len(ids), root)
	} else {
		fmt.Fprintf(stdout, "drawing %d mutants of impl/'s race paths with seed %d (%s)\n", n, f.seed, root)
	}
	s, err := mutation.RunSample(o)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout)
	s.Report(stdout, fmt.Sprintf("seed %d; %s", f.seed, what))
	if f.jsonOut != "" {
		doc := struct {
			schema.Header
			Seed    uint64           `json:"seed"`
			Setting string           `json:"setting"`
			Figures mutation.Figures `json:"figures"`
			Sample  *mutation.Sample `json:"sample"`
		}{schema.New("mutants sample"), f.seed, what, s.Figure(), s}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(f.jsonOut, append(b, '\n'), 0o644); err != nil {
			return fail(err)
		}
	}
	return 0
}

// moduleRoot is the csconform source tree the mutants are drawn from: dir, or the module holding the
// working directory.
func moduleRoot(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/csconform/csconform\n") {
				return d, nil
			}
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("mutants sample needs csconform's source tree: run it inside a clone, or give --src DIR")
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/csconform/csconform\n") {
		return "", fmt.Errorf("--src %s is not csconform's source tree (no go.mod of github.com/csconform/csconform)", dir)
	}
	return filepath.Abs(dir)
}
