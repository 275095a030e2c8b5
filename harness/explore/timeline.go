package explore

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"go.yaml.in/yaml/v3"
)

// waitPrefix is how a step's wait reads before the rest of it ("after 1m0s, "); only says the step is
// a wait and nothing else ("wait 1m0s").
func waitPrefix(st harness.Step) (s string, only bool) {
	if st.Wait <= 0 {
		return "", false
	}
	if st.Until == "" && st.Op == "" && st.Fault == "" {
		return fmt.Sprintf("wait %s", st.Wait), true
	}
	return fmt.Sprintf("after %s, ", st.Wait), false
}

// Describe is one step of a program in words.
func Describe(st harness.Step) string {
	var b strings.Builder
	w, only := waitPrefix(st)
	if only {
		return w
	}
	b.WriteString(w)
	if st.Until != "" {
		what := st.VM
		if st.Until == "implementing" {
			what = st.Network
		} else if st.Until == "host-up" {
			what = st.Host
		}
		if st.Until == "log" {
			fmt.Fprintf(&b, "once the server logs %q, ", st.Line)
		} else {
			fmt.Fprintf(&b, "once %s is %s, ", what, st.Until)
		}
		if st.Op == "" && st.Fault == "" {
			return strings.TrimSuffix(b.String(), ", ")
		}
	}
	switch {
	case st.Fault != "":
		fmt.Fprintf(&b, "fault %s", st.Fault)
		for _, kv := range [][2]string{{"host", st.Host}, {"vm", st.VM}, {"network", st.Network}, {"detail", st.Detail}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
			}
		}
		if st.Duration > 0 {
			fmt.Fprintf(&b, " for %s", st.Duration)
		}
	case st.Op == "deploy":
		fmt.Fprintf(&b, "deploy %s into %s on %s", st.VM, strings.Join(st.Networks, ","), st.Host)
	case st.Op == "migrate":
		fmt.Fprintf(&b, "migrate %s to %s", st.VM, st.Host)
	case st.Op == "deleteNetwork":
		fmt.Fprintf(&b, "%s %s", st.Op, st.Network)
	case st.Op != "":
		fmt.Fprintf(&b, "%s %s", st.Op, st.VM)
	}
	if st.Async {
		b.WriteString(" (without waiting)")
	}
	return b.String()
}

// Counterexample is the program, what the detectors said and the timeline, for a person to read
// against management-server.log.
func (o *Outcome) Counterexample() string {
	var b strings.Builder
	sc := o.Program
	fmt.Fprintf(&b, "program (seed %d, hosts %s", sc.Seed, strings.Join(sc.Hosts, ","))
	for _, k := range slices.Sorted(maps.Keys(sc.Config)) { // a map's order: same seed, same bytes
		fmt.Fprintf(&b, ", %s=%s", k, sc.Config[k])
	}
	b.WriteString("):\n")
	for _, n := range sc.Networks {
		fmt.Fprintf(&b, "   network %s, %s old", n.Name, n.Age)
		if n.Persistent {
			b.WriteString(", persistent")
		}
		b.WriteString("\n")
	}
	for i, st := range sc.Steps {
		fmt.Fprintf(&b, "%3d. %s\n", i+1, Describe(st))
	}
	for _, v := range o.Result.Violations {
		fmt.Fprintf(&b, "INVARIANT %s on %s: %s\n", v.Invariant, v.Object, v.Message)
	}
	for _, r := range o.Illegal {
		fmt.Fprintf(&b, "NOT LINEARIZABLE %s (%d operations); the longest order that works:\n", r.Object, r.Ops)
		for _, l := range r.Explain {
			b.WriteString("   " + l + "\n")
		}
	}
	b.WriteString("timeline:\n")
	b.WriteString(timeline(o.Result.Rec.History().Slice(), sim.Epoch, 150, o.keptLogs()))
	return b.String()
}

// Timeline is the history a person needs: client calls and returns, faults, record state changes of
// VMs, networks and hosts, addresses, warnings and errors, and the violations, at most max lines.
func Timeline(events []history.Event, epoch time.Time, max int) string {
	return timeline(events, epoch, max, nil)
}

// logLine is a log event as a violation's trail names it.
type logLine struct {
	at          time.Time
	actor, text string
}

// keptLogs are the server's log lines below WARN that repro prints with the finding: those of each
// violation's trail ("Found orphaned network 1 in Implementing state ...", the lock lines), and
// those about an object no sequential order explains.
func (o *Outcome) keptLogs() map[logLine]bool {
	keep := map[logLine]bool{}
	for _, v := range o.Result.Violations {
		for _, t := range v.Trail {
			if strings.HasPrefix(t.Event, "[") {
				keep[logLine{t.Time, t.Actor, t.Event}] = true
			}
		}
	}
	if len(o.Illegal) > 0 && o.Result.Rec != nil {
		var objs []string
		for _, r := range o.Illegal {
			objs = append(objs, r.Object)
		}
		es := o.Result.Rec.History().Slice()
		if len(es) > 0 {
			for _, e := range o.Result.Rec.Trail(objs, es[len(es)-1].Time, 40) {
				if e.Kind == history.Log {
					keep[logLine{e.Time, e.Actor, "[" + e.Level + "] " + e.Detail}] = true
				}
			}
		}
	}
	return keep
}

// timeline is Timeline keeping, besides the warnings and errors, the log lines in keep.
func timeline(events []history.Event, epoch time.Time, max int, keep map[logLine]bool) string {
	var lines []string
	for _, e := range events {
		var what string
		switch e.Kind {
		case history.Call:
			what = "calls " + e.Detail
		case history.Return:
			what = "returns " + e.To
			if e.To != "ok" {
				what = "returns " + e.Detail
			}
		case history.Fault:
			if e.From == "" {
				what = "fault " + e.To + " begins: " + e.Detail
			} else {
				what = "fault " + e.From + " ends" + or(": "+e.Detail, e.Detail)
			}
		case history.State:
			if !strings.HasPrefix(e.Object, "vm:") && !strings.HasPrefix(e.Object, "network:") && !strings.HasPrefix(e.Object, "host:") {
				continue
			}
			what = fmt.Sprintf("%s %s -> %s", e.Object, or(e.From, "(new)"), e.To)
			if e.Detail != "" {
				what += " (" + e.Detail + ")"
			}
		case history.IP:
			what = fmt.Sprintf("%s %s -> %s", e.Object, e.From, e.To)
		case history.Log:
			if e.Level != "WARN" && e.Level != "ERROR" && !keep[logLine{e.Time, e.Actor, "[" + e.Level + "] " + e.Detail}] {
				continue
			}
			what = e.Level + " " + e.Detail
		case history.Violation:
			what = "VIOLATION " + e.To + " on " + e.Object + ": " + e.Detail
		default:
			continue
		}
		obj := e.Object
		if e.Kind == history.State || e.Kind == history.IP {
			obj = ""
		}
		lines = append(lines, fmt.Sprintf("  +%s  %-26s %s%s", clock(e.Time.Sub(epoch)), e.Actor, or(obj+" ", ""), what))
	}
	if len(lines) > max {
		n := len(lines) - max
		lines = append(lines[:max], fmt.Sprintf("  … %d more lines in the history", n))
	}
	return strings.Join(lines, "\n") + "\n"
}

func or(s, d string) string {
	if s == "" || s == ": " || s == " " {
		return d
	}
	return s
}

func clock(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d:%06.3f", int(d.Hours()), int(d.Minutes())%60, (d % time.Minute).Seconds())
}

// SaveScenario writes the program as a scenario file for the conformance suite, expecting under the
// profile it ran with the invariants it broke.
func (o *Outcome) SaveScenario(path, profile string) error {
	data, err := o.scenarioYAML(profile)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// scenarioYAML is the program as SaveScenario writes it.
func (o *Outcome) scenarioYAML(profile string) ([]byte, error) {
	sc := *o.Program
	sc.Description = "Found by csconform explore; shrunk by rapid.\n"
	if slices.Contains(impl.ProfileNames(), profile) { // a named profile, not a list of defects
		sc.Expect = map[string]harness.Expect{profile: {Violations: o.Invariants()}}
	}
	return yaml.Marshal(&sc)
}
