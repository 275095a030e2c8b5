package explore

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/marvin"
	"github.com/csconform/csconform/logcheck"
	"github.com/csconform/csconform/model/history"
)

// maxLogLines bounds the management-server.log a bug report quotes: the lines before the finding's
// end, the last ones kept.
const maxLogLines = 300

// Markdown is a finding as a bug report a CloudStack committer can read (explore --report): which
// defect it is, the settings, the shrunk program as API calls and host faults, what broke, the
// timeline and the run's management-server.log in CloudStack's wording, and the replay command. It
// holds nothing of the machine it ran on (no wall time): the same seed gives the same bytes. ""
// for a run that found nothing.
func (s *Summary) Markdown() string {
	if !s.Found || s.Finding == nil || s.Finding.Shrunk == nil {
		return ""
	}
	f := s.Finding
	o := f.Shrunk
	sc := o.Program
	var b strings.Builder
	what := s.findingWhat()
	fmt.Fprintf(&b, "# %s\n\n", what)
	if a := f.Attribution; a != nil {
		fmt.Fprintf(&b, "**%s**\n\n", a.Line)
	}
	fmt.Fprintf(&b, "Found by `csconform explore` under %s, seed %d, after %d case(s); shrunk to %d action(s) (%d step(s)). ",
		s.profileWords(), s.Seed, f.Cases, o.Actions, len(sc.Steps))
	if s.Driver == "" || s.Driver == "sim" {
		b.WriteString("csconform runs a model of Apache CloudStack 4.22's management server, its KVM agents and hosts on a deterministic simulator: " +
			"the replay command below runs this program again with the same interleaving, line for line.\n\n")
	} else {
		fmt.Fprintf(&b, "It ran in the %s world, in real time: a replay may interleave otherwise.\n\n", s.Driver)
	}

	b.WriteString("## Which defect\n\n")
	a := f.Attribution
	switch {
	case a == nil:
		b.WriteString("Not attributed.\n\n")
	default:
		if len(a.Defects) == 0 {
			b.WriteString(a.Line + "\n\n")
		}
		for _, d := range a.Defects {
			fmt.Fprintf(&b, "- **%s**: %s. %s.\n", d.Name, d.Title, strings.TrimSuffix(d.Summary, "."))
			if len(d.Upstream) == 0 {
				b.WriteString("  - upstream: no CloudStack issue yet; csconform's `docs/profiles.md` traces it through the Java (\"Verdicts\")\n")
			}
			for _, u := range d.Upstream {
				fmt.Fprintf(&b, "  - %s: [apache/cloudstack#%d](%s), %s\n", map[string]string{"issue": "issue", "pr": "pull request", "related": "related"}[u.Kind], u.Number, u.URL(), u.Note)
			}
		}
		if a.How != "" {
			fmt.Fprintf(&b, "\nHow this is known: %s.\n", a.How)
		}
		if len(a.Trials) > 0 {
			b.WriteString("\n| re-run of the shrunk program | the finding |\n|---|---|\n")
			for _, t := range a.Trials {
				run := "with " + t.Off + " off"
				if t.Off == "fixed" {
					run = "under fixed (every known defect's switch off)"
				}
				fmt.Fprintf(&b, "| %s | %s |\n", run, map[bool]string{true: "stays", false: "gone"}[t.Stays])
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("## Settings\n\n")
	fmt.Fprintf(&b, "- profile: %s (defects on: %s)\n", s.Profile, strings.Join(orNone(s.Defects), ","))
	sched := "random"
	if s.Scheduler != "" {
		sched = s.Scheduler
	}
	fmt.Fprintf(&b, "- the simulator's scheduler: %s\n", sched)
	fmt.Fprintf(&b, "- KVM hosts: %s\n", strings.Join(sc.Hosts, ", "))
	fmt.Fprintf(&b, "- management servers: %d\n", max(sc.ManagementServers, 1))
	for _, n := range sc.Networks {
		fmt.Fprintf(&b, "- guest network %s (with a virtual router), created %s before the first step", n.Name, n.Age)
		if n.Persistent {
			b.WriteString(", persistent")
		}
		if n.Primed {
			b.WriteString(", primed (implemented once, then shut down by the network GC)")
		}
		b.WriteString("\n")
	}
	if len(sc.Config) == 0 {
		b.WriteString("- global settings: CloudStack's defaults\n")
	} else {
		b.WriteString("- global settings, every other at CloudStack's default:\n\n  | setting | value |\n  |---|---|\n")
		for _, k := range slices.Sorted(maps.Keys(sc.Config)) {
			fmt.Fprintf(&b, "  | `%s` | %s |\n", k, sc.Config[k])
		}
	}
	b.WriteString("\n")

	b.WriteString("## Steps: API calls and host faults\n\n")
	b.WriteString("Each call waits for its async job unless it says otherwise.\n\n")
	var kinds []string
	for i, st := range sc.Steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, APIStep(st))
		if st.Fault != "" && !slices.Contains(kinds, st.Fault) {
			kinds = append(kinds, st.Fault)
		}
	}
	if len(kinds) > 0 {
		b.WriteString("\nThe faults:\n\n")
		for _, k := range kinds {
			for _, fk := range faults.Kinds {
				if fk.Name == k {
					fmt.Fprintf(&b, "- `%s`: %s\n", k, fk.Doc)
				}
			}
		}
	}
	b.WriteString("\n")

	b.WriteString("## What broke\n\n")
	for _, v := range o.Result.Violations {
		fmt.Fprintf(&b, "- invariant **%s** on `%s` at %s: %s\n", v.Invariant, v.Object, harness.Clock(v.Time, sim.Epoch), v.Message)
	}
	for _, r := range o.Illegal {
		fmt.Fprintf(&b, "- **not linearizable**: `%s` (%d operations); no sequential order explains its history. The longest order that works:\n\n", r.Object, r.Ops)
		b.WriteString("  ```\n")
		for _, l := range r.Explain {
			b.WriteString("  " + l + "\n")
		}
		b.WriteString("  ```\n")
	}
	b.WriteString("\nThe invariants are described in csconform's `docs/detectors.md`, the transition guards in `docs/guards.md`.\n\n")

	events := o.Result.Rec.History().Slice()
	b.WriteString("## Timeline\n\n")
	b.WriteString("Client calls and returns, faults, state changes, the server's log lines about the objects involved, and the checks, from the start of the run:\n\n```\n")
	b.WriteString(timeline(events, sim.Epoch, 150, o.keptLogs()))
	b.WriteString("```\n\n")

	b.WriteString("## management-server.log\n\n")
	log, cut := serverLog(events, findingEnd(o, events))
	if log == "" {
		b.WriteString("Not recorded: the server's log stays in its world.\n\n")
	} else {
		b.WriteString("The run as CloudStack 4.22 logs it (`csconform logcheck --render` of its history), up to the finding")
		if cut > 0 {
			fmt.Fprintf(&b, "; its last %d lines (%d before them left out)", maxLogLines, cut)
		}
		b.WriteString(":\n\n```\n" + log + "```\n\n")
	}

	b.WriteString("## Replay\n\n")
	fmt.Fprintf(&b, "```\n%s\n%s\n```\n\n", s.replayCommand(f.Seed), s.replayTest(f.Seed))
	if y, err := o.scenarioYAML(s.Profile); err == nil {
		b.WriteString("The shrunk program as a scenario file (`csconform repro FILE`; the format: `docs/scenario-format.md`):\n\n```yaml\n")
		b.Write(y)
		b.WriteString("```\n")
	}
	return b.String()
}

// findingWhat is the finding in a few words: the invariants broken and the objects not linearizable.
func (s *Summary) findingWhat() string {
	o := s.Finding.Shrunk
	var what []string
	if invs := o.Invariants(); len(invs) > 0 {
		what = append(what, strings.Join(invs, ", ")+" violated")
	}
	var objs []string
	for _, r := range o.Illegal {
		objs = append(objs, r.Object)
	}
	if len(objs) > 0 {
		what = append(what, "not linearizable: "+strings.Join(objs, ", "))
	}
	return strings.Join(what, "; ")
}

// profileWords is the profile as a sentence says it.
func (s *Summary) profileWords() string {
	return fmt.Sprintf("the profile %s (defects on: %s)", s.Profile, strings.Join(orNone(s.Defects), ","))
}

// findingEnd is when the finding was complete: its last violation, and the return of each client
// call in flight then (what it did to the caller); for a finding of linearizability alone, the end
// of the history.
func findingEnd(o *Outcome, events []history.Event) time.Time {
	if len(o.Result.Violations) == 0 && len(events) > 0 {
		return events[len(events)-1].Time
	}
	var end time.Time
	for _, v := range o.Result.Violations {
		if v.Time.After(end) {
			end = v.Time
		}
	}
	inFlight := map[int]bool{}
	last := end
	for _, e := range events {
		switch {
		case e.Kind == history.Call && !e.Time.After(end):
			inFlight[e.Op] = true
		case e.Kind == history.Return && !e.Time.After(end):
			delete(inFlight, e.Op)
		case e.Kind == history.Return && inFlight[e.Op] && e.Time.After(last):
			last = e.Time
		}
	}
	return last
}

// serverLog is the management-server.log of the events up to end (logcheck's rendering, 4.22's
// wording), at most maxLogLines of it, the last ones; cut is how many lines before them were left
// out.
func serverLog(events []history.Event, end time.Time) (log string, cut int) {
	var upTo []history.Event
	for _, e := range events {
		if e.Time.After(end) {
			break
		}
		upTo = append(upTo, e)
	}
	var buf bytes.Buffer
	if err := logcheck.WriteLog(&buf, upTo, logcheck.Style422); err != nil || buf.Len() == 0 {
		return "", 0
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > maxLogLines {
		cut = len(lines) - maxLogLines
		lines = lines[cut:]
	}
	return strings.Join(lines, ""), cut
}

// APIStep is one step of a program as CloudStack's API calls and host faults say it.
func APIStep(st harness.Step) string {
	var b strings.Builder
	w, only := waitPrefix(st)
	if only {
		return w
	}
	b.WriteString(w)
	if st.Until != "" {
		switch st.Until {
		case "log":
			fmt.Fprintf(&b, "once the server logs %q, ", st.Line)
		case "implementing":
			fmt.Fprintf(&b, "once network %s is Implementing, ", st.Network)
		case "host-up":
			fmt.Fprintf(&b, "once host %s is Up, ", st.Host)
		case "start-sent":
			fmt.Fprintf(&b, "once the StartCommand for %s is sent, ", st.VM)
		case "running":
			fmt.Fprintf(&b, "once %s is Running, ", st.VM)
		default:
			fmt.Fprintf(&b, "once %s is %s, ", st.VM, st.Until)
		}
		if st.Op == "" && st.Fault == "" {
			return strings.TrimSuffix(b.String(), ", ")
		}
	}
	call := func(name string, params ...string) {
		fmt.Fprintf(&b, "`%s`", name)
		if len(params) > 0 {
			b.WriteString(" " + strings.Join(params, " "))
		}
	}
	switch st.Op {
	case "":
		fmt.Fprintf(&b, "fault `%s`", st.Fault)
		for _, kv := range [][2]string{{"host", st.Host}, {"vm", st.VM}, {"network", st.Network}, {"server", st.Server}, {"detail", st.Detail}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
			}
		}
		if st.Duration > 0 {
			fmt.Fprintf(&b, " for %s", st.Duration)
		}
	case "deploy", "allocate":
		p := []string{"name=" + st.VM, "networkids=" + strings.Join(st.Networks, ","), "hostid=" + st.Host}
		if st.Op == "allocate" {
			p = append(p, "startvm=false")
		}
		if st.HA {
			p = append(p, "(an HA-enabled service offering)")
		}
		call("deployVirtualMachine", p...)
	case "start":
		call("startVirtualMachine", "id="+st.VM)
		b.WriteString(" (the API's start: its job tries a failed start once more)")
	case "startNoRetry":
		call("startVirtualMachine", "id="+st.VM)
		b.WriteString(" (as an instance boot group starts it: no second try)")
	case "stop":
		call("stopVirtualMachine", "id="+st.VM)
	case "forceStop":
		call("stopVirtualMachine", "id="+st.VM, "forced=true")
	case "destroy":
		call("destroyVirtualMachine", "id="+st.VM)
	case "destroyExpunge":
		call("destroyVirtualMachine", "id="+st.VM, "expunge=true")
	case "expunge":
		call("expungeVirtualMachine", "id="+st.VM)
	case "migrate":
		call("migrateVirtualMachine", "virtualmachineid="+st.VM, "hostid="+st.Host)
	case "recover":
		call("recoverVirtualMachine", "id="+st.VM)
	case "createNetwork":
		call("createNetwork", "name="+st.Network)
	case "deleteNetwork":
		call("deleteNetwork", "id="+st.Network)
	case "setConfig":
		call("updateConfiguration", "name="+st.Key, "value="+st.Value)
	default:
		fmt.Fprintf(&b, "%s %s", st.Op, st.VM)
	}
	if st.Async {
		b.WriteString(", without waiting for it")
	}
	if st.Prime {
		b.WriteString(" (set-up)")
	}
	return b.String()
}

// Marvin is the finding as a Marvin test case for a CloudStack simulator zone (harness/marvin): the
// shrunk program, its faults as configureSimulator mocks, assertions for what it broke.
func (s *Summary) Marvin() string {
	if !s.Found || s.Finding == nil || s.Finding.Shrunk == nil {
		return ""
	}
	o := s.Finding.Shrunk
	return marvin.Test(o.Program, marvin.Finding{Title: s.findingWhat(), Origin: s.replayCommand(s.Finding.Seed), Invariants: o.Invariants()})
}
