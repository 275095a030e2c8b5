package logcheck

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/csconform/csconform/internal/schema"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Malformed is a line that looks like a known kind but does not parse.
type Malformed struct {
	Origin string `json:"origin"`
	Reason string `json:"reason"`
	Text   string `json:"text"`
}

// maxMalformed bounds the malformed lines kept for the report (all are counted).
const maxMalformed = 100

// Report is the outcome of a run.
type Report struct {
	Files     []string         `json:"files"`
	Skipped   []Skip           `json:"skipped,omitempty"`
	Stats     Stats            `json:"stats"`
	First     time.Time        `json:"first"`
	Last      time.Time        `json:"last"`
	Counts    map[string]int64 `json:"facts"`
	Coverage  []Coverage       `json:"coverage"`
	Findings  []Finding        `json:"findings"`
	Malformed []Malformed      `json:"malformed,omitempty"`
}

// Exit codes, the project's scheme.
const (
	ExitOK        = 0
	ExitViolation = 1
	ExitBadInput  = 2
	ExitUndecided = 3
)

// ExitCode is 1 on a finding, 3 when no check could be decided, else 0.
func (r *Report) ExitCode() int {
	if len(r.Findings) > 0 {
		return ExitViolation
	}
	for _, c := range r.Coverage {
		if c.Decidable {
			return ExitOK
		}
	}
	return ExitUndecided
}

// Run reads the files ("-": stdin), merges them by time and judges them. An *InputError (or any
// error) is bad input.
func Run(files []string, stdin io.Reader, o Options) (*Report, error) {
	var srcs []*Source
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	for _, f := range files {
		s, err := OpenSource(f, stdin)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	rep, err := RunSources(srcs, o)
	if rep != nil {
		rep.Files = files
	}
	return rep, err
}

// RunReader judges one plain-text stream (benchmarks, tests).
func RunReader(name string, r io.Reader, o Options) (*Report, error) {
	return RunSources([]*Source{{Name: name, Server: ".", r: NewReader(name, r)}}, o)
}

// RunSources judges opened sources, merged by time.
func RunSources(srcs []*Source, o Options) (*Report, error) {
	servers := map[string]bool{}
	var files []string
	for _, s := range srcs {
		servers[s.Server] = true
		files = append(files, s.Name)
	}
	m := NewMerger(srcs)
	x := NewExtractor()
	c := NewChecker(o)
	rep := &Report{Files: files}
	qualify := len(servers) > 1
	// Reading and parsing run on their own goroutine, a few batches ahead of the checks (two
	// cores: about twice the speed; memory: the batches in flight).
	batches := make(chan batch, 4)
	done := make(chan struct{})
	defer close(done)
	go readAhead(m, batches, done)
	var cur batch
	for {
		if len(cur.es) == 0 {
			if cur.err != nil {
				if cur.err == io.EOF {
					break
				}
				return nil, cur.err
			}
			cur = <-batches
			continue
		}
		e, src := cur.es[0], cur.srcs[0]
		cur.es, cur.srcs = cur.es[1:], cur.srcs[1:]
		if !o.Since.IsZero() && e.Time.Before(o.Since) || !o.Until.IsZero() && e.Time.After(o.Until) {
			continue
		}
		thread := e.Thread
		if thread == "" {
			thread = "unknown"
		}
		switch {
		case e.Host != "": // a host-name prefix names the server, even within one file
			thread = e.Host + "/" + thread
		case qualify:
			thread = src.Server + "/" + thread
		}
		c.Saw(e)
		facts, known, bad := x.Extract(e, thread)
		if bad != "" {
			rep.Stats.Malformed++
			if len(rep.Malformed) < maxMalformed {
				rep.Malformed = append(rep.Malformed, Malformed{Origin: e.Origin(), Reason: bad, Text: e.Raw})
			}
			continue
		}
		if !known {
			rep.Stats.Unknown++
			continue
		}
		if noState(facts) {
			rep.Stats.NoState++
		}
		c.Add(e, facts)
	}
	rep.Coverage = c.Finish()
	rep.Findings = c.Findings
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	rep.Counts = c.Counts()
	rep.First, rep.Last = c.first, c.last
	t := m.Totals()
	rep.Stats.Lines, rep.Stats.Bytes, rep.Stats.Entries, rep.Stats.Orphans, rep.Stats.Continued, rep.Stats.Unparsable = t.Lines, t.Bytes, t.Entries, t.Orphans, t.Continued, t.Unparsable
	rep.Stats.Debug = t.Debug
	return rep, nil
}

// noState says whether every fact of an entry is of a kind no check reads.
func noState(facts []Fact) bool {
	for _, f := range facts {
		if f.Kind != KNoState && f.Kind != KStorage {
			return false
		}
	}
	return len(facts) > 0
}

// IsInputError says whether err is bad input (every error Run returns is).
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// Text writes the report for a person.
func (r *Report) Text(w io.Writer) {
	fmt.Fprintf(w, "logcheck: %d file(s), %d lines, %d entries (%d unknown, %d of no state a check reads, %d malformed, %d continuation lines, %d skipped as binary)",
		len(r.Files), r.Stats.Lines, r.Stats.Entries, r.Stats.Unknown, r.Stats.NoState, r.Stats.Malformed, r.Stats.Continued, r.Stats.Unparsable)
	if !r.First.IsZero() {
		fmt.Fprintf(w, ", %s to %s", r.First.Format("2006-01-02 15:04:05"), r.Last.Format("2006-01-02 15:04:05"))
	}
	fmt.Fprintln(w)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Path, s.Reason)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tVERDICT\tWHAT")
	for _, c := range r.Coverage {
		v := "no violation"
		switch {
		case c.Findings > 0:
			v = fmt.Sprintf("%d finding(s)", c.Findings)
		case !c.Decidable:
			v = "NOT DECIDABLE: the log has no " + strings.Join(c.Missing, ", ") + " lines"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Check, v, c.Doc)
	}
	tw.Flush()
	for _, c := range r.Coverage {
		if c.Note != "" && c.Decidable {
			fmt.Fprintf(w, "  note %s: %s\n", c.Check, c.Note)
		}
	}
	for i, f := range r.Findings {
		fmt.Fprintf(w, "\nFINDING %d: %s on %s at %s\n  %s\n  evidence:\n", i+1, f.Check, f.Object, f.Time.Format("2006-01-02 15:04:05.000"), f.Message)
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "    %s  %s\n", e.Origin, e.Text)
		}
		if len(f.Timeline) > 0 {
			fmt.Fprintf(w, "  timeline of %s:\n", f.Object)
			for _, e := range f.Timeline {
				fmt.Fprintf(w, "    %s  %s\n", e.Origin, e.Text)
			}
		}
	}
	if len(r.Malformed) > 0 {
		fmt.Fprintf(w, "\nmalformed lines (look like a known kind, do not parse): %d\n", r.Stats.Malformed)
		for _, m := range r.Malformed {
			fmt.Fprintf(w, "  %s: %s: %s\n", m.Origin, m.Reason, m.Text)
		}
	}
	switch r.ExitCode() {
	case ExitViolation:
		fmt.Fprintf(w, "\n%d finding(s)\n", len(r.Findings))
	case ExitUndecided:
		if r.Stats.Debug > 0 {
			// written at DEBUG: what lacks is the paths' own lines (an excerpt cut around them, or
			// a server that never ran the operations the checks read)
			fmt.Fprintln(w, "\nnothing could be decided: the log is at DEBUG, but carries none of the lines the checks need (each check above names them): an excerpt cut before them, or a server that did not run those operations")
		} else {
			fmt.Fprintln(w, "\nnothing could be decided: the log carries none of the lines the checks need; it has no DEBUG entries, and most of them are written at DEBUG (set the management server's log4j level to DEBUG)")
		}
	default:
		fmt.Fprintln(w, "\nno violation in the checks the log could decide")
	}
}

// JSON writes the report as one JSON document.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		schema.Header
		*Report
	}{schema.New("logcheck"), r})
}

// JUnit renders one test case per check: a failure per finding, skipped when not decidable.
func (r *Report) JUnit() []byte {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type tc struct {
		Name    string    `xml:"name,attr"`
		Class   string    `xml:"classname,attr"`
		Failure []failure `xml:"failure,omitempty"`
		Skipped *skipped  `xml:"skipped,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name `xml:"testsuite"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Cases    []tc     `xml:"testcase"`
	}
	s := suite{Name: "csconform logcheck"}
	for _, c := range r.Coverage {
		t := tc{Name: c.Check, Class: "logcheck"}
		if !c.Decidable {
			t.Skipped = &skipped{Message: "not decidable: the log has no " + strings.Join(c.Missing, ", ") + " lines"}
			s.Skipped++
		}
		for _, f := range r.Findings {
			if f.Check != c.Check {
				continue
			}
			var b strings.Builder
			for _, e := range f.Evidence {
				fmt.Fprintf(&b, "%s  %s\n", e.Origin, e.Text)
			}
			t.Failure = append(t.Failure, failure{Message: f.Object + ": " + f.Message, Text: b.String()})
		}
		if len(t.Failure) > 0 {
			s.Failures++
		}
		s.Tests++
		s.Cases = append(s.Cases, t)
	}
	out, _ := xml.MarshalIndent(s, "", "  ")
	return append([]byte(xml.Header), append(out, '\n')...)
}

// batch is entries read ahead; err (io.EOF at the end) comes after its entries.
type batch struct {
	es   []*Entry
	srcs []*Source
	err  error
}

const batchSize = 512

func readAhead(m *Merger, out chan<- batch, done <-chan struct{}) {
	b := batch{}
	for {
		e, src, err := m.Next()
		if err != nil {
			b.err = err
			select {
			case out <- b:
			case <-done:
			}
			return
		}
		b.es, b.srcs = append(b.es, e), append(b.srcs, src)
		if len(b.es) == batchSize {
			select {
			case out <- b:
			case <-done:
				return
			}
			b = batch{es: make([]*Entry, 0, batchSize), srcs: make([]*Source, 0, batchSize)}
		}
	}
}
