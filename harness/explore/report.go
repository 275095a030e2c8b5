package explore

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/internal/schema"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/linear"
)

// Summary is a run of explore, for the reports.
type Summary struct {
	Profile    string   `json:"profile"`
	Defects    []string `json:"defects"`
	Seed       uint64   `json:"seed,string"` // a string: jq and JavaScript round numbers above 2^53
	Shard      string   `json:"shard,omitempty"`
	Driver     string   `json:"driver,omitempty"`
	Scheduler  string   `json:"scheduler,omitempty"` // the simulator's strategy when not random
	Peers      bool     `json:"peers,omitempty"`     // programs drew a second management server
	Budget     int      `json:"budget"`
	Cases      int      `json:"cases"`
	Found      bool     `json:"found"`
	Finding    *Finding `json:"-"`
	WallSecs   float64  `json:"wallSeconds"`
	ReplaySeed uint64   `json:"replaySeed,omitempty,string"`
	// Replay is the command that runs the finding again (its seed, profile or defects, scheduler).
	Replay string `json:"replay,omitempty"`
	// Last is the last case run (its history is written for a run that found nothing).
	Last *Outcome `json:"-"`
	// Undecided counts the cases where the linearizability checker timed out on some object: those
	// are not known to be linearizable.
	Undecided int `json:"undecidedCases,omitempty"`
	// Coverage is what the cases reached of the model tables (nil where the world keeps no history).
	Coverage *CoverageSummary `json:"coverage,omitempty"`
	// Interrupted: the run stopped (Ctrl-C, SIGTERM) before its budget; Cases are those it ran.
	// Nothing found is then no verdict.
	Interrupted bool `json:"interrupted,omitempty"`
}

type findingJSON struct {
	schema.Header
	Summary
	Program    []string            `json:"program,omitempty"`
	Violations []map[string]string `json:"violations,omitempty"`
	Illegal    []illegalJSON       `json:"notLinearizable,omitempty"`
	// Attribution is which defect the finding is (Attribute).
	Attribution *Attribution `json:"attribution,omitempty"`
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
		b.WriteString(s.Coverage.SituationsText())
	} else if s.Driver == "container" {
		b.WriteString("coverage: not measured (the server's history stays in its container)\n")
	}
	if !s.Found {
		switch {
		case s.Interrupted: // no verdict: never "found nothing"
			fmt.Fprintf(&b, "%s, nothing found so far", s.interruptedAfter())
			if s.Undecided > 0 {
				fmt.Fprintf(&b, "; %d case(s) UNDECIDED: the linearizability checker timed out on some object", s.Undecided)
			}
			b.WriteString("\n")
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
	b.WriteString(f.Attribution.text())
	fmt.Fprintf(&b, "replay: %s   (or %s)\n", s.replayCommand(f.Seed), s.replayTest(f.Seed))
	if s.Undecided > 0 {
		fmt.Fprintf(&b, "before it, %d case(s) UNDECIDED: the linearizability checker timed out on some object\n", s.Undecided)
	}
	if s.Interrupted {
		b.WriteString(s.interruptedAfter() + "\n")
	}
	return b.String()
}

// interruptedAfter says how far an interrupted run got.
func (s *Summary) interruptedAfter() string {
	return fmt.Sprintf("interrupted after %d of %d cases", s.Cases, s.Budget)
}

// replayFlags are the profile (or defects) and scheduler flags of a replay, for the CLI and go test.
func (s *Summary) replayFlags() (cli, gotest string) {
	cli, gotest = "--profile "+s.Profile, "-csconform.profile="+s.Profile
	if s.Profile == "custom" {
		d := strings.Join(orNone(s.Defects), ",")
		cli, gotest = "--defects "+d, "-csconform.defects="+d
	}
	if s.Scheduler != "" {
		cli, gotest = cli+" --scheduler "+s.Scheduler, gotest+" -csconform.scheduler="+s.Scheduler
	}
	if !s.Peers && (s.Driver == "" || s.Driver == "sim") {
		cli, gotest = cli+" --peers=false", gotest+" -csconform.peers=false"
	}
	return cli, gotest
}

// replayCommand is the CLI command that runs the case of seed again.
func (s *Summary) replayCommand(seed uint64) string {
	cli, _ := s.replayFlags()
	return fmt.Sprintf("csconform explore %s --seed %d --budget 1", cli, seed)
}

func (s *Summary) replayTest(seed uint64) string {
	_, gotest := s.replayFlags()
	return fmt.Sprintf("go test ./harness/explore -run TestExplore %s -rapid.seed=%d", gotest, seed)
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
//
// A directory that already holds a run's reports is refused, so that one run's counterexample never
// sits beside another's "found nothing"; a run that found nothing writes its last case's history.
func (s *Summary) WriteReports(dir string) error {
	if err := CheckOutDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j := findingJSON{Header: schema.New("explore"), Summary: *s}
	if s.Found {
		j.ReplaySeed, j.Replay = s.Finding.Seed, s.replayCommand(s.Finding.Seed)
	}
	if !s.Found && s.Last != nil && s.Last.Result != nil && s.Last.Result.Rec != nil {
		if err := history.WriteFileSeq(filepath.Join(dir, "history.jsonl"), s.Last.Result.Rec.History().All()); err != nil {
			return err
		}
	}
	if s.Found {
		o := s.Finding.Shrunk
		for _, st := range o.Program.Steps {
			j.Program = append(j.Program, Describe(st))
		}
		j.Attribution = s.Finding.Attribution
		for _, v := range o.Result.Violations {
			j.Violations = append(j.Violations, map[string]string{"invariant": v.Invariant, "object": v.Object, "time": v.Time.Format(time.RFC3339Nano), "message": v.Message})
		}
		events := o.Result.Rec.History().Slice()
		windows := faultWindows(events)
		clock := harness.SeqClock(events, sim.Epoch) // as the timeline counts
		for _, r := range o.Illegal {
			name := r.FileName()
			title := fmt.Sprintf("csconform: %s (%s model), seed %d, %s", r.Object, r.Model, s.Finding.Seed, s.Profile)
			if err := r.VisualizeWith(filepath.Join(dir, name), linear.Visual{Title: title, Windows: windows, Clock: clock}); err != nil {
				return fmt.Errorf("visualizing %s: %v", r.Object, err)
			}
			j.Illegal = append(j.Illegal, illegalJSON{Object: r.Object, Model: r.Model, Explain: r.Explain, HTML: name})
		}
		if err := history.WriteFileSeq(filepath.Join(dir, "history.jsonl"), o.Result.Rec.History().All()); err != nil {
			return err
		}
		if err := o.SaveScenario(filepath.Join(dir, "counterexample.yaml"), s.Profile); err != nil {
			return err
		}
	}
	return writeResultFiles(dir, j, s.Text(), s.JUnit())
}

// writeResultFiles writes a run's result.json (result, indented), summary.txt and junit.xml into dir:
// explore --out's and explore merge's three files.
func writeResultFiles(dir string, result any, summary string, junit []byte) error {
	data, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "junit.xml"), junit, 0o644)
}

// CheckOutDir refuses an --out directory that holds files already (an earlier run's reports).
func CheckOutDir(dir string) error {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(es) > 0 {
		return fmt.Errorf("--out %s is not empty (it holds %s, ...): give a fresh directory, so that one run's reports never mix with another's", dir, es[0].Name())
	}
	return nil
}

// faultWindows are the faults of a history as visualization windows: from the begin event's
// sequence number to the end's (open faults to the last event).
func faultWindows(es []history.Event) []linear.Window {
	var out []linear.Window
	open := map[string]int{} // kind|object -> index in out
	var last int64
	for i, e := range es {
		seq := e.Seq
		if seq == 0 {
			seq = int64(i + 1)
		}
		last = seq
		if e.Kind != history.Fault {
			continue
		}
		if e.To != "" {
			open[e.To+"|"+e.Object] = len(out)
			out = append(out, linear.Window{Tag: "fault", Start: seq, End: -1, Description: e.To + " " + e.Object})
		} else if k, ok := open[e.From+"|"+e.Object]; ok {
			out[k].End = seq
			delete(open, e.From+"|"+e.Object)
		}
	}
	for i := range out {
		if out[i].End < 0 {
			out[i].End = last
		}
	}
	return out
}

type junitSuite struct {
	XMLName    xml.Name        `xml:"testsuite"`
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitError   `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitError struct {
	Message string `xml:"message,attr"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit is the run as JUnit XML: one test case per detector, named the same from run to run
// (detector/profile/shard); the seed, the cases run and the replay command are properties; a finding
// is one failure, on the first detector that flagged it, with the counterexample once (a second
// detector that flagged the same finding is marked skipped, pointing at the first). An interrupted
// run has the property interrupted=true and an error on each detector that found nothing.
func (s *Summary) JUnit() []byte {
	run := s.Profile
	if s.Profile == "custom" {
		run = "custom " + strings.Join(orNone(s.Defects), ",")
	}
	suffix := "/" + s.Profile
	if s.Shard != "" {
		suffix += "/shard-" + s.Shard
	}
	suite := junitSuite{Name: "csconform explore " + run, Time: fmt.Sprintf("%.3f", s.WallSecs),
		Properties: []junitProperty{{"seed", strconv.FormatUint(s.Seed, 10)}, {"cases", strconv.Itoa(s.Cases)}, {"budget", strconv.Itoa(s.Budget)}}}
	if s.Scheduler != "" {
		suite.Properties = append(suite.Properties, junitProperty{"scheduler", s.Scheduler})
	}
	inv := junitCase{Name: "invariants" + suffix, Classname: "csconform.explore"}
	lin := junitCase{Name: "linearizability" + suffix, Classname: "csconform.explore"}
	if s.Found {
		o := s.Finding.Shrunk
		replay := s.replayCommand(s.Finding.Seed)
		suite.Properties = append(suite.Properties, junitProperty{"replaySeed", strconv.FormatUint(s.Finding.Seed, 10)}, junitProperty{"replay", replay})
		var what []string
		if len(o.Result.Violations) > 0 {
			what = append(what, strings.Join(o.Invariants(), ", ")+" violated")
		}
		var objs []string
		for _, r := range o.Illegal {
			objs = append(objs, r.Object)
		}
		if len(objs) > 0 {
			what = append(what, "not linearizable: "+strings.Join(objs, ", "))
		}
		if a := s.Finding.Attribution; a != nil {
			what = append(what, a.Line)
		}
		failure := &junitFailure{Message: strings.Join(what, "; "), Text: o.Counterexample() + s.Finding.Attribution.text() + "replay: " + replay + "\n"}
		switch {
		case len(o.Result.Violations) > 0:
			inv.Failure = failure
			if len(objs) > 0 {
				lin.Skipped = &junitSkipped{Message: "the same finding, reported once under invariants" + suffix}
			}
		case len(objs) > 0:
			lin.Failure = failure
		}
	}
	if lin.Failure == nil && lin.Skipped == nil && s.Undecided > 0 {
		lin.Skipped = &junitSkipped{Message: fmt.Sprintf("undecided in %d case(s): the checker timed out", s.Undecided)}
	}
	suite.Cases = []junitCase{inv, lin}
	if s.Interrupted {
		// no verdict where nothing was found: an error on each such detector, never a pass
		suite.Properties = append(suite.Properties, junitProperty{"interrupted", "true"})
		for i := range suite.Cases {
			c := &suite.Cases[i]
			if c.Failure != nil {
				continue
			}
			msg := s.interruptedAfter() + ": not explored to the end, nothing found so far"
			if c.Skipped != nil {
				msg += "; " + c.Skipped.Message
				c.Skipped = nil
			}
			c.Error = &junitError{Message: msg}
		}
	}
	suite.Tests = 2
	for _, c := range suite.Cases {
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Error != nil {
			suite.Errors++
		}
		if c.Skipped != nil {
			suite.Skipped++
		}
	}
	data, _ := xml.MarshalIndent(suite, "", "  ")
	return append([]byte(xml.Header), append(data, '\n')...)
}
