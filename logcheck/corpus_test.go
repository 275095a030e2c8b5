package logcheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// corpusMeta is an excerpt's sidecar (testdata/corpus/NNN-name.yaml): where it was pasted, the
// CloudStack version the thread states, and what a correct checker says of it.
type corpusMeta struct {
	Source      string `yaml:"source"`
	Version     string `yaml:"version"`
	VersionNote string `yaml:"version_note"`
	// Expect is "consistent" (no finding) or "finding CHECK OBJECT" (that finding, among any others).
	Expect string `yaml:"expect"`
	Why    string `yaml:"why"`
	// HeldOut marks an excerpt collected after the extractor had been taught the others: its
	// unknown entries were measured before it taught anything (README.md there).
	HeldOut bool `yaml:"held_out"`
}

var threadURL = regexp.MustCompile(`^https://github\.com/apache/cloudstack/(issues|pull)/[0-9]+$`)

// maxUnknownRate bounds the share of corpus entries of no kind the extractor knows.
const maxUnknownRate = 0.10

// TestCorpus reads every excerpt of real management-server logs pasted in apache/cloudstack issue
// and pull-request threads (testdata/corpus, README.md there): none is refused, each gives what its
// sidecar says a correct checker gives, one without any timestamp decides nothing that needs time,
// and the unknown entries stay under maxUnknownRate. `go test -v -run TestCorpus ./logcheck` prints
// each excerpt's figures and the corpus's unknown-entry rate.
func TestCorpus(t *testing.T) {
	logs, err := filepath.Glob("testdata/corpus/*.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 40 {
		t.Fatalf("%d excerpts, want at least 40", len(logs))
	}
	var entries, unknown, noState, malformed, heldOut int64
	threads := map[string]bool{}
	for _, p := range logs {
		name := strings.TrimSuffix(filepath.Base(p), ".log")
		raw, err := os.ReadFile(strings.TrimSuffix(p, ".log") + ".yaml")
		if err != nil {
			t.Errorf("%s: no sidecar: %v", name, err)
			continue
		}
		var m corpusMeta
		if err := yaml.Unmarshal(raw, &m); err != nil {
			t.Errorf("%s: sidecar: %v", name, err)
			continue
		}
		if !threadURL.MatchString(m.Source) || m.Version == "" || m.VersionNote == "" || m.Expect == "" {
			t.Errorf("%s: sidecar wants source (an apache/cloudstack issue or PR), version, version_note and expect: %+v", name, m)
		}
		threads[m.Source] = true
		if m.HeldOut {
			heldOut++
		}
		rep, err := Run([]string{p}, nil, Options{})
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
			continue
		}
		entries += rep.Stats.Entries
		unknown += rep.Stats.Unknown
		noState += rep.Stats.NoState
		malformed += rep.Stats.Malformed
		var got []string
		for _, f := range rep.Findings {
			got = append(got, f.Check+" "+f.Object)
		}
		switch want := strings.Fields(m.Expect); {
		case m.Expect == "consistent":
			if len(got) > 0 {
				t.Errorf("%s (labelled consistent): findings %q", name, got)
			}
		case len(want) == 3 && want[0] == "finding":
			if !strings.Contains(strings.Join(got, "|"), want[1]+" "+want[2]) {
				t.Errorf("%s: want the finding %s on %s, got %q", name, want[1], want[2], got)
			}
		default:
			t.Errorf("%s: expect %q is neither consistent nor \"finding CHECK OBJECT\"", name, m.Expect)
		}
		if rep.First.IsZero() { // no line with a time: nothing that needs time is decided
			for i, c := range rep.Coverage {
				if Checks[i].NeedsTime && c.Decidable {
					t.Errorf("%s: no timestamp, yet %s is decidable", name, c.Check)
				}
			}
		}
		t.Logf("%-48s %-10s %3d entries %2d unknown %2d no-state %d malformed  %s", name, m.Version, rep.Stats.Entries, rep.Stats.Unknown, rep.Stats.NoState, rep.Stats.Malformed, m.Expect)
	}
	if entries == 0 {
		t.Fatal("no entries")
	}
	rate := float64(unknown) / float64(entries)
	t.Logf("corpus: %d excerpts (%d held out) from %d threads, %d entries: %d unknown (%.1f%%), %d of no state a check reads (%.1f%%), %d malformed",
		len(logs), heldOut, len(threads), entries, unknown, 100*rate, noState, 100*float64(noState)/float64(entries), malformed)
	if rate > maxUnknownRate {
		t.Errorf("unknown entries %.1f%% of the corpus, want at most %.0f%%", 100*rate, 100*maxUnknownRate)
	}
}
