package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// TrailEvent is one step that led to a violation, as a line a CloudStack engineer can read against
// management-server.log.
type TrailEvent struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	Event string    `json:"event"`
}

func (c *Cluster) trail(v invariant.Violation) []TrailEvent {
	objs := []string{v.Object}
	kind, name, _ := strings.Cut(v.Object, ":")
	switch kind {
	case "domain":
		if r := c.DB.VMByNameAny(name); r != nil {
			objs = append(objs, VMObj(r.ID))
		}
	case "ip":
		for e := range c.Rec.History().All() {
			if e.Object == v.Object {
				objs = append(objs, e.From, e.To)
			}
		}
	case "volume":
		for e := range c.Rec.History().All() {
			if e.Detail == name && strings.HasPrefix(e.Object, "volume:") {
				objs = append(objs, e.Object)
			}
		}
	case "vm":
		if vmID, err := parseID(name); err == nil {
			if r := c.DB.VM(vmID); r != nil {
				for _, n := range r.NetworkIDs {
					objs = append(objs, fmt.Sprintf("network:%d", n))
				}
			}
		}
	}
	var out []TrailEvent
	for _, e := range c.Rec.Trail(dedupe(objs), v.Time, 40) {
		out = append(out, TrailEvent{Time: e.Time, Actor: e.Actor, Event: describe(e)})
	}
	return out
}

func parseID(s string) (int64, error) {
	var i int64
	_, err := fmt.Sscan(s, &i)
	return i, err
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if x != "" && x != "free" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// describe renders an event as one readable line.
func describe(e history.Event) string {
	switch e.Kind {
	case history.Log:
		return fmt.Sprintf("[%s] %s", e.Level, e.Detail)
	case history.State, history.Power:
		s := fmt.Sprintf("%s %s -> %s", e.Object, or(e.From, "∅"), e.To)
		if e.Detail != "" {
			s += " (" + e.Detail + ")"
		}
		if e.LockHolder != "" && e.LockHolder != e.Actor {
			s += " while " + e.LockHolder + " holds its lock"
		}
		if e.Direct {
			s += " [direct write]"
		}
		return s
	case history.IP:
		return fmt.Sprintf("%s %s -> %s", e.Object, e.From, e.To)
	case history.Call:
		return fmt.Sprintf("call #%d %s", e.Op, e.Detail)
	case history.Return:
		return fmt.Sprintf("return #%d %s: %s", e.Op, e.To, e.Detail)
	case history.Fault:
		if e.To != "" {
			return fmt.Sprintf("fault %s begins on %s: %s", e.To, e.Object, e.Detail)
		}
		return fmt.Sprintf("fault %s ends on %s %s", e.From, e.Object, e.Detail)
	}
	return fmt.Sprintf("%s %s %s %s %s", e.Kind, e.Object, e.From, e.To, e.Detail)
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// WriteText writes the run as a table like the seed report's A/B table, then each violation with the
// steps that led to it.
func (r *Result) WriteText(w io.Writer, epoch time.Time) {
	if r.External != "" {
		expect := "no profile (outcome and violations only)"
		if r.Profile != "" {
			expect = "compared with the expectations of " + r.Profile
		}
		fmt.Fprintf(w, "== %s — %s\n   external CloudStack %s, run %s, %s, %s\n",
			r.Scenario, r.Title, r.External, r.Run, expect, r.VirtualEnd.Round(time.Second))
	} else {
		sched := ""
		if r.Scheduler != "" {
			sched = " (" + r.Scheduler + ")"
		}
		fmt.Fprintf(w, "== %s — %s\n   profile %s (defects on: %s), seed %d, %s of virtual time, %d scheduler steps%s\n",
			r.Scenario, r.Title, r.Profile, orNone(strings.Join(r.Defects, ",")), r.Seed, r.VirtualEnd.Round(time.Second), r.Steps, sched)
	}
	if len(r.Cases) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "   Case\tVM\tNetwork\tAge at test\tPath\tResult\tFinal\tCleanup during the implementation")
		for _, c := range r.Cases {
			res := c.Result
			switch c.Result {
			case "passed", "failed":
				res = fmt.Sprintf("%s, %.0f s", c.Result, c.Duration.Seconds())
			case "retried":
				res = fmt.Sprintf("passed, %.0f s; first attempt failed, retry passed", c.Duration.Seconds())
			}
			age := ""
			if c.Network != "" {
				age = fmt.Sprintf("%d min", c.AgeMinutes)
			}
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(c.Case), c.VM, orDash(c.Network), orDash(age), c.Path, res, orDash(c.FinalState), orDash(c.Cleanup))
		}
		tw.Flush()
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "   %s\n", n)
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "   no invariant violated")
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "   VIOLATION %s at %s: %s%s\n", v.Invariant, Clock(v.Time, epoch), v.Message, lasted(v))
		for _, t := range v.Trail {
			fmt.Fprintf(w, "      %s  %-26s %s\n", Clock(t.Time, epoch), t.Actor, t.Event)
		}
	}
	for _, l := range r.NotLinearizable {
		fmt.Fprintf(w, "   NOT LINEARIZABLE %s (%d operations); the longest order that works:\n", l.Object, l.Ops)
		for _, e := range l.Explain {
			fmt.Fprintf(w, "      %s\n", e)
		}
	}
	for _, l := range r.Undecided {
		fmt.Fprintf(w, "   UNDECIDED %s (%d operations): the linearizability checker timed out\n", l.Object, l.Ops)
	}
	for _, l := range r.Leftovers {
		fmt.Fprintf(w, "   LEFT BEHIND (cleanup failed): %s\n", l)
	}
	if r.External != "" && len(r.Leftovers) == 0 {
		fmt.Fprintf(w, "   cleanup: every VM and network of run %s is gone\n", r.Run)
	}
	if r.Expected {
		if len(r.Mismatches) == 0 {
			fmt.Fprintf(w, "   outcome as expected for %s\n", r.Profile)
		}
		for _, m := range r.Mismatches {
			fmt.Fprintf(w, "   UNEXPECTED: %s\n", m)
		}
	}
	fmt.Fprintln(w)
}

// SeqClock is, for a visualization's time axis (linear.Visual), the time of the event of a
// sequence number as Clock prints it. An event without a sequence number is numbered by its place,
// as the history's reader does.
func SeqClock(events []history.Event, epoch time.Time) func(int64) (string, bool) {
	at := make(map[int64]time.Time, len(events))
	for i, e := range events {
		seq := e.Seq
		if seq == 0 {
			seq = int64(i + 1)
		}
		at[seq] = e.Time
	}
	return func(seq int64) (string, bool) {
		t, ok := at[seq]
		if !ok {
			return "", false
		}
		return Clock(t, epoch), true
	}
}

// Clock is t as the reports print it: since epoch, +hh:mm:ss.mmm.
func Clock(t, epoch time.Time) string {
	d := t.Sub(epoch)
	return fmt.Sprintf("+%02d:%02d:%06.3f", int(d.Hours()), int(d.Minutes())%60, float64(d%time.Minute)/float64(time.Second))
}

func orDash(s string) string { return or(s, "-") }
func orNone(s string) string { return or(s, "none") }

// JSON is the run as indented JSON.
func (r *Result) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// lasted says how long a lasting violation's damage stayed: healed after a while, or still there when
// the run ended.
func lasted(v Violation) string {
	switch {
	case !v.Lasting:
		return ""
	case v.HealedAt.IsZero():
		return " [still present at the end of the run]"
	}
	return fmt.Sprintf(" [healed after %s]", v.HealedAt.Sub(v.Time).Round(time.Millisecond))
}
