package explore

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/csconform/csconform/internal/printable"
	"github.com/csconform/csconform/internal/schema"
)

// Shard is one shard's reports as explore --out wrote them into Dir.
type Shard struct {
	Dir    string
	I, N   int // the shard, i of n (0 of 1: an unsharded run)
	Result findingJSON
	suite  junitSuite
}

// Merged is the shards of one sharded run (explore --shard i/n --out DIR in each job of a CI
// matrix) joined: one summary and one JUnit file.
type Merged struct {
	schema.Header
	Profile     string          `json:"profile"`
	Defects     []string        `json:"defects"`
	Seed        uint64          `json:"seed,string"`
	Scheduler   string          `json:"scheduler,omitempty"`
	Driver      string          `json:"driver,omitempty"`
	Shards      int             `json:"shards"`
	Budget      int             `json:"budget"`
	Cases       int             `json:"cases"`
	Found       bool            `json:"found"`
	Undecided   int             `json:"undecidedCases,omitempty"`
	Interrupted []string        `json:"interrupted,omitempty"` // the shards that stopped before their budget
	WallSecs    float64         `json:"wallSeconds"`           // summed over the shards
	Findings    []MergedFinding `json:"findings,omitempty"`
	Parts       []MergedPart    `json:"parts"`
}

// MergedFinding is one shard's finding.
type MergedFinding struct {
	Shard      string   `json:"shard"`
	ReplaySeed uint64   `json:"replaySeed,string"`
	Replay     string   `json:"replay"`
	Line       string   `json:"line,omitempty"` // which defect it is
	Invariants []string `json:"invariants,omitempty"`
	Program    []string `json:"program,omitempty"`
}

// MergedPart is where one shard's reports are.
type MergedPart struct {
	Shard string `json:"shard"`
	Dir   string `json:"dir"`
	Cases int    `json:"cases"`
}

// A shard's files come from a CI artifact, someone else's job or a bug report: what merge reads
// of them is bounded, and what it prints of them escaped.
const (
	// MaxShardFile is the most merge reads of a shard's result.json or junit.xml (a shard writes a
	// few KiB to a few MiB): a bigger file, or /dev/zero behind a link, is refused, not read whole.
	MaxShardFile = 64 << 20
	// MaxShards is the most shards a run may be split into (explore --shard i/n, n at most this):
	// a CI matrix is tens of jobs; a result.json's "0/2000000000" is refused before merge counts.
	MaxShards = 10000
)

// readCapped reads a shard's file, refusing one over MaxShardFile.
func readCapped(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxShardFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > MaxShardFile {
		return nil, fmt.Errorf("%s: larger than the %d MiB a shard's file may be: not a report explore --out wrote", Printable(name), MaxShardFile>>20)
	}
	return b, nil
}

// Printable is s with its control characters written as \xNN: text from a shard's files is printed,
// and must not drive the reader's terminal.
func Printable(s string) string { return printable.String(s) }

// ReadShard reads the result.json and junit.xml explore --out wrote into dir. A result.json of
// schema version 0 (before the header) is read too.
func ReadShard(dir string) (*Shard, error) {
	b, err := readCapped(filepath.Join(dir, "result.json"))
	if err != nil {
		if strings.Contains(err.Error(), "larger than") {
			return nil, err
		}
		return nil, fmt.Errorf("%s: not an explore --out directory: %w", Printable(dir), err)
	}
	s := &Shard{Dir: dir}
	if err := json.Unmarshal(b, &s.Result); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "result.json"), err)
	}
	r := &s.Result
	if r.SchemaVersion > schema.Version {
		return nil, fmt.Errorf("%s: schema version %d is newer than this csconform's (%d)", filepath.Join(dir, "result.json"), r.SchemaVersion, schema.Version)
	}
	if r.Command != "" && r.Command != "explore" {
		return nil, fmt.Errorf("%s: written by %s, not by explore --out", filepath.Join(dir, "result.json"), Printable(r.Command))
	}
	s.I, s.N = 0, 1
	if r.Shard != "" {
		a, b, _ := strings.Cut(r.Shard, "/")
		i, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
			return nil, fmt.Errorf("%s: shard %q is not i/n", filepath.Join(dir, "result.json"), r.Shard)
		}
		if n > MaxShards {
			return nil, fmt.Errorf("%s: shard %s: a run is split into %d shards at most", filepath.Join(dir, "result.json"), r.Shard, MaxShards)
		}
		s.I, s.N = i, n
	}
	x, err := readCapped(filepath.Join(dir, "junit.xml"))
	if err != nil {
		return nil, err
	}
	if err := xml.Unmarshal(x, &s.suite); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "junit.xml"), err)
	}
	return s, nil
}

// Merge joins the shards of one run: the same profile (or defects), seed, scheduler and driver, each
// shard i/n once and every one of the n there, so that the union is the run unsharded.
func Merge(shards []*Shard) (*Merged, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("no shard to merge")
	}
	slices.SortFunc(shards, func(a, b *Shard) int { return a.I - b.I })
	first := shards[0].Result
	m := &Merged{Header: schema.New("explore merge"), Profile: first.Profile, Defects: first.Defects, Seed: first.Seed,
		Scheduler: first.Scheduler, Driver: first.Driver, Shards: shards[0].N}
	for k, s := range shards {
		r := s.Result
		same := r.Profile == first.Profile && slices.Equal(r.Defects, first.Defects) && r.Seed == first.Seed &&
			r.Scheduler == first.Scheduler && r.Driver == first.Driver && r.Peers == first.Peers
		if !same {
			return nil, fmt.Errorf("%s is not a shard of the same run as %s: profile, defects, seed, scheduler, driver and peers must match (%s seed %d vs %s seed %d)",
				Printable(s.Dir), Printable(shards[0].Dir), Printable(r.Profile), r.Seed, Printable(first.Profile), first.Seed)
		}
		if s.N != m.Shards {
			return nil, fmt.Errorf("%s is shard %s, %s shard %s: one run's shards share their n", Printable(s.Dir), Printable(r.Shard), Printable(shards[0].Dir), Printable(first.Shard))
		}
		if k > 0 && shards[k-1].I == s.I {
			return nil, fmt.Errorf("%s and %s are both shard %s", Printable(shards[k-1].Dir), Printable(s.Dir), Printable(r.Shard))
		}
		m.Budget += r.Budget
		m.Cases += r.Cases
		m.Undecided += r.Undecided
		m.WallSecs += r.WallSecs
		name := r.Shard
		if name == "" {
			name = "0/1"
		}
		m.Parts = append(m.Parts, MergedPart{Shard: name, Dir: s.Dir, Cases: r.Cases})
		if r.Interrupted {
			m.Interrupted = append(m.Interrupted, name)
		}
		if r.Found {
			m.Found = true
			f := MergedFinding{Shard: name, ReplaySeed: r.ReplaySeed, Replay: r.Replay, Program: r.Program}
			if r.Attribution != nil {
				f.Line = r.Attribution.Line
			}
			for _, v := range r.Violations {
				if !slices.Contains(f.Invariants, v["invariant"]) {
					f.Invariants = append(f.Invariants, v["invariant"])
				}
			}
			for _, l := range r.Illegal {
				f.Invariants = append(f.Invariants, "not linearizable: "+l.Object)
			}
			m.Findings = append(m.Findings, f)
		}
	}
	if len(shards) != m.Shards {
		var missing []string
		for i := range m.Shards { // at most MaxShards (ReadShard)
			if !slices.ContainsFunc(shards, func(s *Shard) bool { return s.I == i }) {
				if len(missing) == 10 {
					missing = append(missing, fmt.Sprintf("and %d more", m.Shards-len(shards)-10))
					break
				}
				missing = append(missing, fmt.Sprintf("%d/%d", i, m.Shards))
			}
		}
		return nil, fmt.Errorf("shard(s) %s missing: the merge would not be the whole run", strings.Join(missing, ", "))
	}
	return m, nil
}

// Text is the merged run's summary: a line a shard, then the verdict.
func (m *Merged) Text() string {
	var b strings.Builder
	// every string here but the counts comes from a shard's result.json: printable
	fmt.Fprintf(&b, "merged %d shard(s) of seed %d under %s (defects on: %s)", m.Shards, m.Seed, Printable(m.Profile), Printable(strings.Join(orNone(m.Defects), ",")))
	if m.Scheduler != "" {
		fmt.Fprintf(&b, ", scheduler %s", Printable(m.Scheduler))
	}
	fmt.Fprintf(&b, ": %d of %d cases, %.1f s in all\n", m.Cases, m.Budget, m.WallSecs)
	for _, p := range m.Parts {
		what := "found nothing"
		if slices.Contains(m.Interrupted, p.Shard) {
			what = "INTERRUPTED, nothing found so far"
		}
		for _, f := range m.Findings {
			if f.Shard == p.Shard {
				what = "FOUND " + Printable(strings.Join(f.Invariants, ", "))
				if f.Line != "" {
					what += ": " + Printable(f.Line)
				}
				what += "\n    replay: " + Printable(f.Replay)
			}
		}
		fmt.Fprintf(&b, "  shard %-6s %6d cases  %s  (%s)\n", Printable(p.Shard), p.Cases, what, Printable(p.Dir))
	}
	switch {
	case m.Found:
		fmt.Fprintf(&b, "FOUND in %d of %d shard(s)\n", len(m.Findings), m.Shards)
	case len(m.Interrupted) > 0:
		fmt.Fprintf(&b, "no verdict: shard(s) %s stopped before their budget, nothing found so far\n", Printable(strings.Join(m.Interrupted, ", ")))
	case m.Undecided > 0:
		fmt.Fprintf(&b, "found nothing; %d case(s) UNDECIDED: the linearizability checker timed out on some object\n", m.Undecided)
	default:
		b.WriteString("found nothing: no invariant broken, every object's history linearizable\n")
	}
	return b.String()
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// JUnit is one JUnit file of every shard's suite, as each shard wrote it (its test cases are named
// by shard already), under a testsuites element that counts them all.
func (m *Merged) JUnit(shards []*Shard) []byte {
	all := junitSuites{Name: "csconform explore " + m.Profile + " (merged shards)", Time: fmt.Sprintf("%.3f", m.WallSecs)}
	for _, s := range shards {
		all.Suites = append(all.Suites, s.suite)
		all.Tests += s.suite.Tests
		all.Failures += s.suite.Failures
		all.Errors += s.suite.Errors
		all.Skipped += s.suite.Skipped
	}
	data, _ := xml.MarshalIndent(all, "", "  ")
	return append([]byte(xml.Header), append(data, '\n')...)
}

// WriteReports writes summary.txt, result.json and junit.xml of the merged run into dir (a fresh
// one, as explore --out).
func (m *Merged) WriteReports(dir string, shards []*Shard) error {
	if err := CheckOutDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeResultFiles(dir, m, m.Text(), m.JUnit(shards))
}
