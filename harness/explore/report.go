package explore

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/csconform/csconform/model/history"
)

// Summary is a run of explore, for the reports.
type Summary struct {
	Profile    string   `json:"profile"`
	Defects    []string `json:"defects"`
	Seed       uint64   `json:"seed"`
	Shard      string   `json:"shard,omitempty"`
	Driver     string   `json:"driver,omitempty"`
	Scheduler  string   `json:"scheduler,omitempty"` // the simulator's strategy when not random
	Budget     int      `json:"budget"`
	Cases      int      `json:"cases"`
	Found      bool     `json:"found"`
	Finding    *Finding `json:"-"`
	WallSecs   float64  `json:"wallSeconds"`
	ReplaySeed uint64   `json:"replaySeed,omitempty"`
	// Undecided counts the cases where the linearizability checker timed out on some object: those
	// are not known to be linearizable.
	Undecided int `json:"undecidedCases,omitempty"`
	// Coverage is what the cases reached of the model tables (nil where the world keeps no history).
	Coverage *CoverageSummary `json:"coverage,omitempty"`
}

type findingJSON struct {
	Summary
	Program    []string            `json:"program,omitempty"`
	Violations []map[string]string `json:"violations,omitempty"`
	Illegal    []illegalJSON       `json:"notLinearizable,omitempty"`
}

type illegalJSON struct {
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Explain []string `json:"explain"`
	HTML    string   `json:"visualization,omitempty"`
}

// Text is the short summary a person reads first.
func (s *Summary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "explored %d cases under %s (defects on: %s), seed %d", s.Cases, s.Profile, strings.Join(orNone(s.Defects), ","), s.Seed)
	if s.Shard != "" {
		fmt.Fprintf(&b, ", shard %s", s.Shard)
	}
	if s.Scheduler != "" {
		fmt.Fprintf(&b, ", scheduler %s", s.Scheduler)
	}
	fmt.Fprintf(&b, ", %.1f s\n", s.WallSecs)
	if s.Coverage != nil {
		b.WriteString(s.Coverage.Text() + "\n")
	} else if s.Driver == "container" {
		b.WriteString("coverage: not measured (the server's history stays in its container)\n")
	}
	if !s.Found {
		switch {
		case s.Driver == "container":
			b.WriteString("found nothing: no invariant broken (linearizability is not checked in containers: the server's history stays in its container)\n")
		case s.Undecided > 0:
			fmt.Fprintf(&b, "found nothing: no invariant broken; %d case(s) UNDECIDED: the linearizability checker timed out on some object (not known to be linearizable); every other object's history linearizable\n", s.Undecided)
		default:
			b.WriteString("found nothing: no invariant broken, every object's history linearizable\n")
		}
		return b.String()
	}
	f := s.Finding
	fmt.Fprintf(&b, "FOUND after %d cases; shrunk to %d actions (%d steps):\n", f.Cases, f.Shrunk.Actions, len(f.Shrunk.Program.Steps))
	b.WriteString(f.Shrunk.Counterexample())
	cli, gotest := "--profile "+s.Profile, "-csconform.profile="+s.Profile
	if s.Profile == "custom" {
		d := strings.Join(orNone(s.Defects), ",")
		cli, gotest = "--defects "+d, "-csconform.defects="+d
	}
	if s.Scheduler != "" {
		cli, gotest = cli+" --scheduler "+s.Scheduler, gotest+" -csconform.scheduler="+s.Scheduler
	}
	fmt.Fprintf(&b, "replay: csconform explore %s --seed %d --budget 1   (or go test ./harness/explore -run TestExplore %s -rapid.seed=%d)\n",
		cli, f.Seed, gotest, f.Seed)
	if s.Undecided > 0 {
		fmt.Fprintf(&b, "before it, %d case(s) UNDECIDED: the linearizability checker timed out on some object\n", s.Undecided)
	}
	return b.String()
}

func orNone(x []string) []string {
	if len(x) == 0 {
		return []string{"none"}
	}
	return x
}

// WriteReports writes, into dir: summary.txt, result.json, junit.xml and, for a finding, the shrunk
// run's history.jsonl, counterexample.yaml (a scenario file) and one porcupine HTML per failing
// partition (never the whole history).
func (s *Summary) WriteReports(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j := findingJSON{Summary: *s}
	if s.Found {
		o := s.Finding.Shrunk
		for _, st := range o.Program.Steps {
			j.Program = append(j.Program, Describe(st))
		}
		for _, v := range o.Result.Violations {
			j.Violations = append(j.Violations, map[string]string{"invariant": v.Invariant, "object": v.Object, "message": v.Message})
		}
		for _, r := range o.Illegal {
			name := r.FileName()
			if err := r.Visualize(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("visualizing %s: %v", r.Object, err)
			}
			j.Illegal = append(j.Illegal, illegalJSON{Object: r.Object, Model: r.Model, Explain: r.Explain, HTML: name})
		}
		if err := history.WriteFile(filepath.Join(dir, "history.jsonl"), o.Result.Cluster.Rec.Events); err != nil {
			return err
		}
		if err := o.SaveScenario(filepath.Join(dir, "counterexample.yaml"), s.Profile); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(s.Text()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "junit.xml"), s.JUnit(), 0o644)
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit is the run as JUnit XML: one test case per detector.
func (s *Summary) JUnit() []byte {
	suite := junitSuite{Name: "csconform explore " + s.Profile, Time: fmt.Sprintf("%.3f", s.WallSecs)}
	inv := junitCase{Name: fmt.Sprintf("invariants over %d cases", s.Cases), Classname: "csconform.explore"}
	lin := junitCase{Name: fmt.Sprintf("linearizability over %d cases", s.Cases), Classname: "csconform.explore"}
	if s.Found {
		o := s.Finding.Shrunk
		if len(o.Result.Violations) > 0 {
			inv.Failure = &junitFailure{Message: strings.Join(o.Invariants(), ", ") + " violated", Text: o.Counterexample()}
		}
		if len(o.Illegal) > 0 {
			var objs []string
			for _, r := range o.Illegal {
				objs = append(objs, r.Object)
			}
			lin.Failure = &junitFailure{Message: "not linearizable: " + strings.Join(objs, ", "), Text: o.Counterexample()}
		}
	}
	if lin.Failure == nil && s.Undecided > 0 {
		lin.Skipped = &junitSkipped{Message: fmt.Sprintf("undecided in %d case(s): the checker timed out", s.Undecided)}
	}
	suite.Cases = []junitCase{inv, lin}
	suite.Tests = 2
	for _, c := range suite.Cases {
		if c.Failure != nil {
			suite.Failures++
		}
	}
	data, _ := xml.MarshalIndent(suite, "", "  ")
	return append([]byte(xml.Header), append(data, '\n')...)
}
