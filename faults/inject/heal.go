package inject

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	for n := 1; sc.Scan(); n++ {
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
	if err := sc.Err(); err != nil {
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
	return ReadUnhealed(f)
}

// Heal undoes runs a killed csconform left: their heal steps, then the cancelling of their heal
// timers (a failed heal keeps the host's timer), each logged, and a done record per run. Without Yes
// it only shows what it would run. A run without known heal steps is reported, not guessed at.
func (in *Injector) Heal(ctx context.Context, runs []Unhealed) error {
	out := in.Out
	if out == nil {
		out = io.Discard
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
