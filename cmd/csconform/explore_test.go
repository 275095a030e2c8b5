package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/csconform/csconform/internal/tier"
)

func TestExploreAndCheck(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte(`{"seq":1,"kind":"call","op":1}`+"\nnot json\n"), 0o644)
	cases := []cliCase{
		{[]string{"explore", "--shard", "3/2"}, 2, "--shard wants i/n"},
		{[]string{"explore", "--shard", "0/20000", "--seed", "1"}, 2, "a run is split into 10000 shards at most"}, // explore merge would refuse it
		{[]string{"explore", "--detectors", "eyes"}, 2, "--detectors wants"},
		{[]string{"explore", "--budget", "0"}, 2, "at least 1"},
		{[]string{"explore", "--profile", "nope"}, 2, "unknown profile"},
		{[]string{"explore", "extra"}, 2, "unexpected argument"},
		{[]string{"explore", "--profile", "fixed", "--budget", "30", "--seed", "5", "--quiet"}, 0, "found nothing"},
		{[]string{"explore", "--profile", "fixed", "--budget", "30", "--seed", "5", "--shard", "1/3", "--quiet"}, 0, "shard 1/3"},
		{[]string{"explore", "--defects", "D1", "--budget", "20", "--seed", "5", "--quiet", "--out", out}, 1, "NOT LINEARIZABLE network:"},
		{[]string{"check", filepath.Join(out, "history.jsonl")}, 1, "INVARIANT network-lock"},
		{[]string{"check", garbage}, 2, "garbage.jsonl:2"},
		{[]string{"check", filepath.Join(dir, "missing.jsonl")}, 2, "no such file"},
		{[]string{"check"}, 2, "name one history file"},
		{[]string{"bench", "--seeds", "0"}, 2, "at least 1"},
	}
	runCLICases(t, cases)
	for _, f := range []string{"summary.txt", "result.json", "junit.xml", "history.jsonl", "counterexample.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if html, _ := filepath.Glob(filepath.Join(out, "partition-*.html")); len(html) == 0 {
		t.Error("no visualization of the failing partition")
	}
	// the saved counterexample is a scenario the repro command runs
	var o, e bytes.Buffer
	if code := run([]string{"repro", filepath.Join(out, "counterexample.yaml"), "--defects", "D1"}, &o, &e); code != 1 {
		t.Fatalf("repro of the counterexample: exit %d\n%s%s", code, o.String(), e.String())
	}
}

func TestBenchFlags(t *testing.T) {
	runCLICases(t, []cliCase{
		{[]string{"bench", "--defects", "D9"}, 2, "--defects takes"},
		{[]string{"bench", "--shrink", "-1"}, 2, "--shrink and --throughput must not be negative"},
		{[]string{"bench", "--throughput", "-1"}, 2, "--throughput must not be negative"},
	})
}

// TestExploreInterruptedWritesItsReports: SIGTERM (a CI timeout's) to explore --out stops it with
// exit 130 and the reports of what it explored, marked interrupted; it never says it found nothing.
// Before, it wrote nothing and printed "found nothing".
func TestExploreInterruptedWritesItsReports(t *testing.T) {
	tier.Need(t, tier.Long) // builds the binary
	t.Parallel()            // beside the package's real-time tests, which mostly wait
	dir := t.TempDir()
	bin := buildCSConform(t)
	out := filepath.Join(dir, "out")
	// fixed finds nothing: 2,000 cases run well past the first progress line (at 10%)
	cmd := exec.Command(bin, "explore", "--profile", "fixed", "--budget", "2000", "--seed", "5", "--out", out)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stderr)
	var errb strings.Builder
	for lines.Scan() { // the first progress line: cases have run
		errb.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "cases,") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		errb.WriteString(lines.Text() + "\n")
	}
	_ = cmd.Wait()
	all := stdout.String() + errb.String()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, all)
	}
	if strings.Contains(all, "found nothing") || !strings.Contains(stdout.String(), "nothing found so far") {
		t.Fatalf("an interrupted run says it found nothing, or not that it was interrupted:\n%s", all)
	}
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatalf("no result.json: %v\n%s", err, all)
	}
	var res struct {
		Interrupted bool `json:"interrupted"`
		Cases       int  `json:"cases"`
		Budget      int  `json:"budget"`
	}
	if err := json.Unmarshal(data, &res); err != nil || !res.Interrupted || res.Cases < 1 || res.Cases >= res.Budget {
		t.Fatalf("result.json (%v), want interrupted with the cases it ran:\n%s", err, data)
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil || !strings.Contains(string(junit), `<property name="interrupted" value="true">`) || !strings.Contains(string(junit), "<error") {
		t.Fatalf("junit.xml (%v), want it marked interrupted:\n%s", err, junit)
	}
}
