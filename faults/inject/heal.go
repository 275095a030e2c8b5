package inject

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Unhealed is a run of the audit log that applied a step and never logged its end: csconform was
// killed (or lost its machine) while the fault held. Its plan record says how to undo it.
type Unhealed struct {
	ID, Fault, Target string
	Started           time.Time
	Heal, Disarm      []Step
	// Unknown: the plan record carries no heal steps (a log written before they were recorded, or a
	// fault with nothing to heal): nothing can be run, the operator has to look.
	Unknown bool
}

// maxLogLine bounds one audit-log line (a record with its command output is a few KiB).
const maxLogLine = 1 << 20

// ReadUnhealed lists, in the order they started, the runs of an audit log that applied something
// and did not finish (no done record) — what `csconform inject heal` undoes.
func ReadUnhealed(r io.Reader) ([]Unhealed, error) {
	type run struct {
		u       Unhealed
		applied bool
		done    bool
	}
	runs := map[string]*run{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLogLine)
	n := 0 // the line read last
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("audit log line %d: not a record: %v", n, err)
		}
		if rec.ID == "" {
			return nil, fmt.Errorf("audit log line %d: a record without a run id", n)
		}
		ru := runs[rec.ID]
		if ru == nil {
			ru = &run{u: Unhealed{ID: rec.ID, Fault: rec.Fault, Started: rec.Time, Unknown: true}}
			runs[rec.ID] = ru
			order = append(order, rec.ID)
		}
		switch rec.Action {
		case "plan":
			ru.u.Target, ru.u.Heal, ru.u.Disarm = rec.Target, rec.Heal, rec.Disarm
			ru.u.Unknown = len(rec.Heal) == 0
		case "apply":
			ru.applied = true
		case "done":
			ru.done = true
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		// /dev/zero, or any file that is not a log: bufio's "token too long" says nothing of which
		return nil, fmt.Errorf("audit log line %d: longer than the %d MiB a record may be: not an inject audit log", n+1, maxLogLine>>20)
	} else if err != nil {
		return nil, fmt.Errorf("audit log: %v", err)
	}
	var out []Unhealed
	for _, id := range order {
		if ru := runs[id]; ru.applied && !ru.done {
			out = append(out, ru.u)
		}
	}
	return out, nil
}

// ReadUnhealedFile is ReadUnhealed on a file.
func ReadUnhealedFile(name string) ([]Unhealed, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	runs, err := ReadUnhealed(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return runs, nil
}

// healSQL is backdate's heal statement, as Build writes it: the network and the seconds are read
// back from it.
var healSQL = regexp.MustCompile(`^UPDATE networks SET created = created \+ INTERVAL ([0-9]{1,12}) SECOND WHERE uuid = '([0-9a-fA-F-]{8,64})' AND removed IS NULL$`)

// Plan is the plan a run's heal steps come from, made again: the log is a file anyone who can
// write it can edit, so its steps are trusted only if Build, given the fault, hosts, domain,
// network and run id the steps name, makes exactly them. The plan's targets and hosts are then
// checked against the allowlist like a new fault's.
func (u Unhealed) Plan() (Plan, error) {
	k, ok := KindByName(u.Fault)
	if !ok {
		return Plan{}, fmt.Errorf("run %s: unknown fault %q", u.ID, u.Fault)
	}
	s := Spec{Fault: k.Name, ID: u.ID, Duration: cmpOr(k.Default, time.Minute)}
	for _, st := range u.Heal {
		if len(s.Hosts) == 0 || s.Hosts[len(s.Hosts)-1] != st.Host {
			s.Hosts = append(s.Hosts, st.Host)
		}
	}
	if len(u.Heal) > 0 {
		argv := u.Heal[0].Argv
		switch k.Name {
		case SlowRouterBoot:
			if len(argv) > 0 {
				s.VM = argv[len(argv)-1]
			}
		case Disconnect:
			for i, a := range argv {
				if a == "--dport" && i+1 < len(argv) {
					s.MgmtPort, _ = strconv.Atoi(argv[i+1])
				}
			}
		case Backdate:
			if m := healSQL.FindStringSubmatch(argv[len(argv)-1]); len(argv) == 4 && m != nil {
				secs, _ := strconv.ParseInt(m[1], 10, 64)
				s.By, s.Network = time.Duration(secs)*time.Second, m[2]
			}
		}
	}
	p, err := Build(s)
	if err != nil {
		return p, fmt.Errorf("run %s: its heal steps are not a plan inject makes: %v", u.ID, err)
	}
	if !stepsEqual(p.Heal, u.Heal) || !stepsEqual(p.Disarm, u.Disarm) {
		return p, fmt.Errorf("run %s: its heal steps are not the ones inject makes for %s on %s: %s",
			u.ID, k.Name, strings.Join(p.Targets, ","), firstStrange(append(append([]Step(nil), u.Heal...), u.Disarm...), append(append([]Step(nil), p.Heal...), p.Disarm...)))
	}
	return p, nil
}

func stepsEqual(a, b []Step) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// firstStrange names the first step of got that want does not have (or the count that differs).
func firstStrange(got, want []Step) string {
	for i, s := range got {
		if i >= len(want) || !reflect.DeepEqual(s, want[i]) {
			return strconv.Quote(s.String())
		}
	}
	return fmt.Sprintf("%d steps, want %d", len(got), len(want))
}

// CheckHeal refuses runs whose heal steps are not ones inject makes, or whose hosts and targets the
// policy does not allow (the ssh rules included: where ssh -G says each host leads, a ProxyCommand,
// a shared connection): one refused run refuses them all, before anything runs.
func (in *Injector) CheckHeal(ctx context.Context, runs []Unhealed) error {
	pol := in.Policy
	if r, ok := in.Exec.(Resolver); ok && pol.Resolve == nil {
		pol.Resolve = func(h string) (Endpoint, error) { return r.Resolve(ctx, h) }
	}
	for _, u := range runs {
		if u.Unknown {
			continue // nothing of it runs
		}
		p, err := u.Plan()
		if err != nil {
			return fmt.Errorf("refused: %v; nothing was run", err)
		}
		if err := pol.Check(p); err != nil {
			return fmt.Errorf("refused: run %s: %s; nothing was run", u.ID, strings.TrimPrefix(err.Error(), "refused: "))
		}
	}
	return nil
}

// Heal undoes runs a killed csconform left: their heal steps, then the cancelling of their heal
// timers (a failed heal keeps the host's timer), each logged, and a done record per run. Without Yes
// it only shows what it would run. A run without known heal steps is reported, not guessed at.
func (in *Injector) Heal(ctx context.Context, runs []Unhealed) error {
	out := in.Out
	if out == nil {
		out = io.Discard
	}
	// the log's steps are checked as a new fault's are, all of them before any runs
	if err := in.CheckHeal(ctx, runs); err != nil {
		return err
	}
	var errs []error
	for _, u := range runs {
		rec := func(r Record) {
			r.ID, r.Fault = u.ID, u.Fault
			if in.Log != nil {
				if e := in.Log.Write(r); e != nil {
					errs = append(errs, e)
				}
			}
		}
		fmt.Fprintf(out, "run %s: %s on %s, started %s, not healed\n", u.ID, u.Fault, u.Target, u.Started.Format(time.RFC3339))
		if u.Unknown {
			fmt.Fprintf(out, "  its plan record lists no heal steps: look at the log's apply records (id %s) and undo them by hand\n", u.ID)
			errs = append(errs, fmt.Errorf("run %s: no heal steps recorded", u.ID))
			continue
		}
		if !in.Yes {
			for _, s := range u.Heal {
				fmt.Fprintln(out, "  would run  ", s)
			}
			for _, s := range u.Disarm {
				fmt.Fprintln(out, "  then cancel", s)
			}
			continue
		}
		failed, es := in.healSteps(ctx, u.Heal, u.Disarm, "inject heal", "  ", "healed", rec, out)
		for _, e := range es {
			errs = append(errs, fmt.Errorf("run %s: %w", u.ID, e))
		}
		res := "ok (inject heal)"
		if failed {
			res = "error: a heal step failed (inject heal)"
		}
		rec(Record{Action: "done", Target: u.Target, Result: res})
	}
	return errors.Join(errs...)
}
