package main

import (
	"os"
	"path/filepath"
	"testing"
)

// CI artifacts (issue 15): shards slice one seed space, --out is never a directory with an earlier
// run's reports, and repro all --history keeps every scenario's history.
func TestArtifactFlags(t *testing.T) {
	dir := t.TempDir()
	used := filepath.Join(dir, "used")
	os.MkdirAll(used, 0o755)
	os.WriteFile(filepath.Join(used, "summary.txt"), []byte("found nothing"), 0o644)
	runCLICases(t, []cliCase{
		{[]string{"explore", "--shard", "1/4", "--budget", "1"}, 2, "--shard needs --seed N"},
		{[]string{"explore", "--seed", "1", "--budget", "1", "--out", used}, 2, "is not empty (it holds summary.txt"},
		{[]string{"explore", "--seed", "1", "--shard", "1/4", "--budget", "1", "--quiet"}, 0, "shard 1/4"},
	})
	hist := filepath.Join(dir, "h.jsonl")
	runCLICases(t, []cliCase{{[]string{"repro", "seed-004-forced-destroy", "--profile", "fixed", "--history", hist}, 0, "seed-004"}})
	if _, err := os.Stat(hist); err != nil {
		t.Fatal("one scenario: --history FILE itself:", err)
	}
	if got := historyPath(hist, "seed-000-ab", 2); got != filepath.Join(dir, "h.seed-000-ab.jsonl") {
		t.Fatalf("historyPath = %s", got)
	}
}
