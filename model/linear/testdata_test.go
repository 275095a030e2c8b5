package linear

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/model/history"
)

var updateVerdicts = flag.Bool("update", false, "rewrite testdata/histories/*.verdict from the checker's answers")

// TestDataHistories re-checks the recorded histories of testdata/histories (seed scenarios under
// both profiles, a cross-object invariant the models cannot see, an explored counterexample) and
// compares each verdict with its golden file, as etcd's TestDataReports and porcupine's test_data
// do: a change to a model or to how histories become operations that flips a verdict fails here.
// The histories are csconform repro --history / explore --out files; -update rewrites the verdicts
// (read the diff: each line is a partition the checker now judges differently).
func TestDataHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories in testdata/histories (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".jsonl"), func(t *testing.T) {
			events, err := history.ReadFile(f, history.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got := verdict(events)
			golden := strings.TrimSuffix(f, ".jsonl") + ".verdict"
			if *updateVerdicts {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./model/linear -run TestDataHistories -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s: the verdict changed\n--- want\n%s--- got\n%s", f, want, got)
			}
		})
	}
}

// verdict is a history's judgement as text: the partitions and how each was judged, and the
// invariant violations the run recorded.
func verdict(events []history.Event) string {
	var b strings.Builder
	results := Check(Partitions(events), time.Minute)
	fmt.Fprintf(&b, "%d events, %d partitions\n", len(events), len(results))
	var lines []string
	for _, r := range results {
		lines = append(lines, fmt.Sprintf("%s %s (%s, %d operations)", r.Verdict, r.Object, r.Model, r.Ops))
	}
	slices.Sort(lines)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	var recorded []string
	for _, e := range events {
		if e.Kind == history.Violation {
			recorded = append(recorded, fmt.Sprintf("recorded %s on %s", e.To, e.Object))
		}
	}
	slices.Sort(recorded)
	for _, l := range slices.Compact(recorded) {
		b.WriteString(l + "\n")
	}
	return b.String()
}
