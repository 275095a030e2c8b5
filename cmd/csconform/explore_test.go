package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestExploreAndCheck(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte(`{"seq":1,"kind":"call","op":1}`+"\nnot json\n"), 0o644)
	cases := []cliCase{
		{[]string{"explore", "--shard", "3/2"}, 2, "--shard wants i/n"},
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
