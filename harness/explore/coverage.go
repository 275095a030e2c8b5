package explore

import (
	"fmt"
	"iter"
	"strings"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Machine names a state machine of model/.
type Machine string

// The machines coverage counts, in the order it prints them.
const (
	MachineVM      Machine = "vm"
	MachineNetwork Machine = "network"
	MachineHost    Machine = "host"
	MachineJob     Machine = "job"
)

var machines = []Machine{MachineVM, MachineNetwork, MachineHost, MachineJob}

// Transition is one row of a model table.
type Transition struct {
	Machine     Machine
	From, Event string
	To          string
}

// Transitions lists every row of the model tables: vm.Transitions, network.Transitions,
// host.Transitions and, as model/job has statuses but no table, IN_PROGRESS to each status that is
// done. It is what coverage counts against (M).
func Transitions() []Transition {
	var out []Transition
	for _, t := range vm.Transitions {
		out = append(out, Transition{MachineVM, string(t.From), string(t.Event), string(t.To)})
	}
	for _, t := range network.Transitions {
		out = append(out, Transition{MachineNetwork, string(t.From), string(t.Event), string(t.To)})
	}
	for _, t := range host.Transitions {
		out = append(out, Transition{MachineHost, string(t.From), string(t.Event), string(t.To)})
	}
	for _, s := range job.Statuses() {
		if s.Done() {
			out = append(out, Transition{MachineJob, string(job.InProgress), "", string(s)})
		}
	}
	return out
}

var allTransitions = Transitions()

// rows and networkRows index allTransitions for rowOf, which reads every state event of every case: a
// row by itself, and a network's row by its two states.
var rows, networkRows = func() (map[Transition]bool, map[[2]string]Transition) {
	all, nets := map[Transition]bool{}, map[[2]string]Transition{}
	for _, t := range allTransitions {
		all[t] = true
		if _, dup := nets[[2]string{t.From, t.To}]; t.Machine == MachineNetwork && !dup {
			nets[[2]string{t.From, t.To}] = t // the first, as the scan it replaces took
		}
	}
	return all, nets
}()

// Coverage is what runs reached: rows of the model tables, and kinds of log line (a line with its
// numbers blanked out, so that vm3 and vm4 say the same thing).
type Coverage struct {
	Hit  map[Transition]bool
	Logs map[string]bool
	// Situations counts, by situation (Situations), the cases that reached it.
	Situations map[string]int
}

// NewCoverage is an empty coverage.
func NewCoverage() *Coverage {
	return &Coverage{Hit: map[Transition]bool{}, Logs: map[string]bool{}, Situations: map[string]int{}}
}

// Situation is a rare thing a detector needs a run to reach: a transition guard's (it judges
// nothing until its transition happens), or a race a log line marks.
type Situation struct {
	Name   string // the guard's name, or the race's
	Reach  string // what a run must reach, in words
	marker string // a log line's text that marks it (a race); "" for a guard's
}

// Situations lists every situation explore counts: each guard's, then the races the fixed reference
// handles and says so in its log.
var Situations = func() []Situation {
	var out []Situation
	for _, g := range guard.Guards {
		out = append(out, Situation{Name: g.Name, Reach: g.Situation})
	}
	return append(out,
		Situation{"report-postponed", "a power report came while a work job was pending on its VM", "postpone power-change report"},
		Situation{"gc-met-a-start", "the network GC's last look found a start on the network it meant to shut down", "is in use again: not shutting it down"},
		Situation{"stale-report-ignored", "a power-on report collected before the VM's last state change was ignored", "Ignoring the power-on report"},
	)
}()

// AddSituations counts the situations a case reached: the guards that decided a transition in it,
// and the races its log marks.
func (c *Coverage) AddSituations(guarded map[string]int, events iter.Seq[history.Event]) {
	seen := map[string]bool{}
	for g, n := range guarded {
		if n > 0 {
			seen[g] = true
		}
	}
	if events != nil {
		for e := range events {
			if e.Kind != history.Log {
				continue
			}
			for _, s := range Situations {
				if s.marker != "" && !seen[s.Name] && strings.Contains(e.Detail, s.marker) {
					seen[s.Name] = true
				}
			}
		}
	}
	for s := range seen {
		c.Situations[s]++
	}
}

// CaseCoverage reads a run's history: each state change that is a row of a model table, and each log
// line's kind. A change no table explains (a VM's creation or removal, a network state set around the
// state machine, a host's event that changes nothing and so writes nothing) counts for nothing.
func CaseCoverage(events iter.Seq[history.Event]) *Coverage {
	c := NewCoverage()
	for e := range events {
		switch e.Kind {
		case history.State:
			if t, ok := rowOf(e); ok {
				c.Hit[t] = true
			}
		case history.Log:
			c.Logs[logKind(e)] = true
		}
	}
	return c
}

// rowOf finds the table row a state change took, from how impl's store records each machine: a VM's
// detail is "name Event host=H", a host's detail is its event, a network's change is identified by its
// two states (no two rows share both), and a job only ever leaves IN_PROGRESS.
func rowOf(e history.Event) (Transition, bool) {
	kind, _, _ := strings.Cut(e.Object, ":")
	if e.From == "" && kind != "host" {
		return Transition{}, false // a row inserted: only a host's first status is a table row
	}
	var t Transition
	switch kind {
	case "vm":
		f := strings.Fields(e.Detail)
		if len(f) < 3 || !strings.HasPrefix(f[len(f)-1], "host=") {
			return Transition{}, false
		}
		t = Transition{MachineVM, e.From, f[len(f)-2], e.To}
	case "host":
		t = Transition{MachineHost, e.From, e.Detail, e.To}
	case "job":
		t = Transition{MachineJob, e.From, "", e.To}
	case "network":
		if e.Direct {
			return Transition{}, false
		}
		r, ok := networkRows[[2]string{e.From, e.To}]
		return r, ok
	default:
		return Transition{}, false
	}
	return t, rows[t]
}

// logKind is a log line with its digits blanked: "Network 7 is still free" and "Network 12 is still
// free" are one kind.
func logKind(e history.Event) string {
	var b strings.Builder
	b.Grow(len(e.Level) + 1 + len(e.Detail))
	b.WriteString(e.Level)
	b.WriteByte(' ')
	digits := false
	for i := 0; i < len(e.Detail); i++ {
		ch := e.Detail[i]
		if ch >= '0' && ch <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(ch)
	}
	return b.String()
}

// Merge adds o to c and says how many transitions and log kinds were new (a situation reached for the
// first time counts as a new log kind).
func (c *Coverage) Merge(o *Coverage) (transitions, logs int) {
	for s, n := range o.Situations {
		if c.Situations[s] == 0 {
			logs++
		}
		c.Situations[s] += n
	}
	for t := range o.Hit {
		if !c.Hit[t] {
			c.Hit[t] = true
			transitions++
		}
	}
	for k := range o.Logs {
		if !c.Logs[k] {
			c.Logs[k] = true
			logs++
		}
	}
	return transitions, logs
}

// MachineCoverage is one machine's count.
type MachineCoverage struct {
	Machine Machine `json:"machine"`
	Reached int     `json:"reached"`
	Total   int     `json:"total"`
}

// CoverageSummary is coverage in figures, for the reports.
type CoverageSummary struct {
	Reached  int               `json:"transitionsReached"`
	Total    int               `json:"transitions"`
	Machines []MachineCoverage `json:"machines"`
	LogKinds int               `json:"logKinds"`
	// Unreached lists the rows no case took, "machine: From -Event-> To".
	Unreached []string `json:"unreached,omitempty"`
	// Situations are how many cases reached each situation, in Situations' order (a zero is a gap).
	Situations []SituationCount `json:"situations,omitempty"`
}

// SituationCount is one situation's count.
type SituationCount struct {
	Name  string `json:"name"`
	Reach string `json:"reach"`
	Cases int    `json:"cases"`
}

// Summary counts c against the model tables.
func (c *Coverage) Summary() *CoverageSummary {
	s := &CoverageSummary{Total: len(allTransitions), LogKinds: len(c.Logs)}
	for _, m := range machines {
		mc := MachineCoverage{Machine: m}
		for _, t := range allTransitions {
			if t.Machine != m {
				continue
			}
			mc.Total++
			if c.Hit[t] {
				mc.Reached++
			} else {
				s.Unreached = append(s.Unreached, t.String())
			}
		}
		s.Reached += mc.Reached
		s.Machines = append(s.Machines, mc)
	}
	for _, st := range Situations {
		s.Situations = append(s.Situations, SituationCount{Name: st.Name, Reach: st.Reach, Cases: c.Situations[st.Name]})
	}
	return s
}

// SituationsText lists how many cases reached each situation, the gaps (never reached) last.
func (s *CoverageSummary) SituationsText() string {
	if len(s.Situations) == 0 {
		return ""
	}
	var b strings.Builder
	reached := 0
	for _, st := range s.Situations {
		if st.Cases > 0 {
			reached++
		}
	}
	fmt.Fprintf(&b, "situations the detectors need: %d of %d reached\n", reached, len(s.Situations))
	for _, st := range s.Situations {
		if st.Cases > 0 {
			fmt.Fprintf(&b, "  %7d cases  %s (%s)\n", st.Cases, st.Reach, st.Name)
		}
	}
	for _, st := range s.Situations {
		if st.Cases == 0 {
			fmt.Fprintf(&b, "  never reached: %s (%s)\n", st.Reach, st.Name)
		}
	}
	return b.String()
}

func (t Transition) String() string {
	from := t.From
	if from == "" {
		from = "(new)"
	}
	if t.Event == "" {
		return fmt.Sprintf("%s: %s -> %s", t.Machine, from, t.To)
	}
	return fmt.Sprintf("%s: %s -%s-> %s", t.Machine, from, t.Event, t.To)
}

// Text is the summary's line: "coverage: N of M transitions (vm a/b, network c/d, host e/f, job g/h)".
func (s *CoverageSummary) Text() string {
	var parts []string
	for _, m := range s.Machines {
		parts = append(parts, fmt.Sprintf("%s %d/%d", m.Machine, m.Reached, m.Total))
	}
	return fmt.Sprintf("coverage: %d of %d transitions (%s); %d kinds of log line", s.Reached, s.Total, strings.Join(parts, ", "), s.LogKinds)
}

// eventsOf is a run's history, nil where the world keeps none of the server's (a server in a container).
func eventsOf(r *harness.Result) iter.Seq[history.Event] { return r.ServerHistory() }
