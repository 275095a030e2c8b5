package mutation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Verdict is the oracle's answer on one binary: what killed it ("repro", "explore"; "" nothing)
// and how. The mutant binary prints it as its last line of JSON.
type Verdict struct {
	KilledBy string `json:"killedBy"`
	Detail   string `json:"detail,omitempty"`
}

// Fate is how a mutant's oracle run ended.
type Fate string

const (
	Killed   Fate = "killed"
	Survived Fate = "survived"
	// Hung: the oracle gave no verdict within SampleOptions.Bound. A bound that only tells a hang
	// (a deleted unlock, a loop that no longer ends) from a verdict; it never turns one into the other.
	Hung Fate = "hung"
)

// Result is one sampled mutant's fate.
type Result struct {
	Mutant
	Diff     string  `json:"diff"`
	Fate     Fate    `json:"fate"`
	KilledBy string  `json:"killedBy,omitempty"`
	Detail   string  `json:"detail,omitempty"`
	Witness  *bool   `json:"witnessed,omitempty"` // go test failed with it (nil: not run)
	WitTests string  `json:"witnessTests,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// SampleOptions say what to draw and how to judge it.
type SampleOptions struct {
	Root    string   // the module's root (go.mod)
	Files   []string // the files to mutate, relative to Root
	Enum    Options
	N       int      // mutants to judge (ones that do not compile are drawn past, not counted)
	Seed    uint64   // the draw
	IDs     []string // judge exactly these mutants, in this order, instead of drawing (a survivor again after a fix)
	Main    string   // the package of the binary that judges itself, relative to Root (./cmd/csconform)
	Oracle  []string
	Witness []string // packages for go test (nil: no witness)
	Bound   time.Duration
	Work    string // a scratch directory (removed by the caller)
	Ctx     context.Context
	// Progress sees each result as it is judged (a long run shows it moving).
	Progress func(i int, r Result)
}

// Sample is what a run drew and judged.
type Sample struct {
	Points    int      `json:"points"`    // mutants the files offer
	Stillborn int      `json:"stillborn"` // drawn but did not compile
	Results   []Result `json:"results"`
}

// BaselineArg is the oracle's flag naming the unmutated binary, which replays an exploration's
// finding to tell the mutant's findings from the reference's own.
const BaselineArg = "--baseline"

// RunSample draws o.N mutants that compile, in the order o.Seed shuffles them, and judges each:
// the oracle (the mutant binary run with o.Oracle), then the witness (go test of o.Witness).
func RunSample(o SampleOptions) (*Sample, error) {
	if o.Ctx == nil {
		o.Ctx = context.Background()
	}
	abs := make([]string, len(o.Files))
	for i, f := range o.Files {
		abs[i] = filepath.Join(o.Root, f)
	}
	all, err := Enumerate(abs, o.Enum)
	if err != nil {
		return nil, err
	}
	s := &Sample{Points: len(all)}
	order := rand.New(rand.NewPCG(o.Seed, 0x6d757461)).Perm(len(all))
	if len(o.IDs) > 0 {
		if order, err = byID(all, o.IDs); err != nil {
			return nil, err
		}
		o.N = len(order)
	}
	base := filepath.Join(o.Work, "baseline")
	if err := o.build(base, ""); err != nil {
		return nil, fmt.Errorf("the unmutated tree does not build: %v", err)
	}
	// a baseline the oracle kills would make every mutant look killed
	if v, fate, err := o.judge(base, base); err != nil {
		return nil, err
	} else if fate != Survived {
		return nil, fmt.Errorf("the unmutated reference fails the oracle (%s: %s): fix that before measuring mutants", fate, v.Detail)
	}
	bin := filepath.Join(o.Work, "mutant")
	for _, k := range order {
		if len(s.Results) == o.N {
			break
		}
		if err := o.Ctx.Err(); err != nil {
			return s, err
		}
		m := all[k]
		src, err := os.ReadFile(m.File)
		if err != nil {
			return nil, err
		}
		mutated, err := Apply(src, m)
		if err != nil {
			return nil, err
		}
		overlay, err := o.overlay(m.File, mutated)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := o.build(bin, overlay); err != nil {
			if o.Ctx.Err() != nil {
				return s, o.Ctx.Err()
			}
			s.Stillborn++
			continue
		}
		r := Result{Mutant: m, Diff: Diff(src, m)}
		r.File, _ = filepath.Rel(o.Root, m.File)
		// the witness beside the oracle: the unit tests mostly wait (real-time API tests), the
		// oracle is one simulator thread
		wit := make(chan Result, 1)
		if len(o.Witness) > 0 {
			go func() {
				var w Result
				ok, tests := o.witness(overlay)
				w.Witness, w.WitTests = &ok, tests
				wit <- w
			}()
		} else {
			wit <- Result{}
		}
		v, fate, err := o.judge(bin, base)
		w := <-wit
		if err != nil {
			return s, fmt.Errorf("%s: %v", m.ID, err)
		}
		r.Fate, r.KilledBy, r.Detail = fate, v.KilledBy, v.Detail
		r.Witness, r.WitTests = w.Witness, w.WitTests
		r.Seconds = time.Since(start).Seconds()
		s.Results = append(s.Results, r)
		if o.Progress != nil {
			o.Progress(len(s.Results), r)
		}
	}
	return s, nil
}

// byID is the positions in all of ids, each of which must be there.
func byID(all []Mutant, ids []string) ([]int, error) {
	at := make(map[string]int, len(all))
	for i, m := range all {
		at[m.ID] = i
	}
	var out []int
	for _, id := range ids {
		i, ok := at[id]
		if !ok {
			return nil, fmt.Errorf("no mutant %q in this tree (an id is file:line:operator#k of the tree it was drawn from; a line that moved since changes it)", id)
		}
		out = append(out, i)
	}
	return out, nil
}

// Find returns the mutants of files with these ids, in the order given.
func Find(files []string, o Options, ids []string) ([]Mutant, error) {
	all, err := Enumerate(files, o)
	if err != nil {
		return nil, err
	}
	pos, err := byID(all, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Mutant, len(pos))
	for i, p := range pos {
		out[i] = all[p]
	}
	return out, nil
}

func (o SampleOptions) overlay(file string, src []byte) (string, error) {
	mf := filepath.Join(o.Work, "mutated.go")
	if err := os.WriteFile(mf, src, 0o600); err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]map[string]string{"Replace": {file: mf}})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(o.Work, "overlay.json")
	return ov, os.WriteFile(ov, b, 0o600)
}

func (o SampleOptions) build(out, overlay string) error {
	args := []string{"build", "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.CommandContext(o.Ctx, "go", append(args, o.Main)...)
	cmd.Dir = o.Root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, firstLines(stderr.String(), 3))
	}
	return nil
}

// judge runs the oracle in bin; a run past the bound is Hung, a verdict it cannot print an error.
func (o SampleOptions) judge(bin, baseline string) (Verdict, Fate, error) {
	ctx, cancel := context.WithTimeout(o.Ctx, o.Bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, o.Oracle...), BaselineArg, baseline)...)
	cmd.Dir = o.Root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return Verdict{Detail: fmt.Sprintf("no verdict within %s", o.Bound)}, Hung, nil
	}
	if o.Ctx.Err() != nil {
		return Verdict{}, "", o.Ctx.Err()
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var v Verdict
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &v); jerr != nil {
		// a mutant binary that crashes before its verdict (a panic outside a run) is caught by
		// the very first thing a user would run
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Verdict{KilledBy: "crash", Detail: firstLines(stderr.String()+stdout.String(), 1)}, Killed, nil
		}
		return Verdict{}, "", fmt.Errorf("the oracle printed no verdict: %s", firstLines(stderr.String(), 3))
	}
	if v.KilledBy == "" {
		return v, Survived, nil
	}
	return v, Killed, nil
}

// witness runs the unit tests on the mutant: true if any fails (or hangs past the bound, which go
// test reports as a failure); the failing tests' names.
func (o SampleOptions) witness(overlay string) (bool, string) {
	args := append([]string{"test", "-count=1", "-overlay", overlay, "-timeout", o.Bound.String()}, o.Witness...)
	cmd := exec.CommandContext(o.Ctx, "go", args...)
	cmd.Dir = o.Root
	out, err := cmd.CombinedOutput()
	if err == nil {
		return false, ""
	}
	var failed []string
	for _, l := range strings.Split(string(out), "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(l), "--- FAIL: "); ok {
			name, _, _ := strings.Cut(t, " ")
			failed = append(failed, name)
		}
	}
	if len(failed) == 0 {
		return true, firstLines(string(out), 1)
	}
	if len(failed) > 5 {
		failed = append(failed[:5], fmt.Sprintf("and %d more", len(failed)-5))
	}
	return true, strings.Join(failed, ", ")
}

func firstLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, " | ")
}
