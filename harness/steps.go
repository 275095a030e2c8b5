package harness

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/model/history"
)

// stepWorld is what the one step runner needs of a world: its clock, how it runs a step beside the
// next ones, and each kind of step. Every world (simulator, live, libvirt, containers, an external
// CloudStack) runs a scenario's steps through runSteps, so a step means the same everywhere.
type stepWorld interface {
	untilWorld
	// wait sleeps d of the world's time before a step; an error (a real world's context ended) ends
	// the run.
	wait(d time.Duration) error
	// fault applies a fault step; setConfig sets a configuration key (an error where the world cannot).
	fault(st Step) error
	setConfig(key, value string) error
	// newCase is an op step's row of the table: the world fills what it knows (the VM's network and
	// its age in the simulator).
	newCase(st Step, client string) CaseResult
	// The client operations, run as client: an operation's failure is an outcome the world records;
	// an error returned (an op the world cannot run) ends the run. vmOp is the VM operations (start,
	// startNoRetry, stop, forceStop, destroy, destroyExpunge, expunge).
	createNetwork(client, name string) error
	deploy(client string, st Step) error
	allocate(client string, st Step) error
	vmOp(client string, st Step) error
	// async runs fn beside the next steps as a task named name; awaitAsync returns once every fn
	// async started has returned.
	async(name string, fn func())
	awaitAsync()
	// ended is not nil once the run was ended from outside (Ctrl-C in a real world).
	ended() error
}

// runSteps runs a scenario's steps on w: waits, until conditions, faults, configuration changes and
// client operations (each a row of res's table); async steps run beside the next ones and are waited
// for at the end. A fault's error ends the run unless the scenario is lenient; an op's failure is an
// outcome, never an error of the run.
func runSteps(w stepWorld, steps []Step, lenient bool, res *Result) error {
	var mu sync.Mutex // async steps run on real goroutines in a real world
	var asyncErr error
	for i, st := range steps {
		if st.Wait > 0 {
			if err := w.wait(st.Wait); err != nil {
				return err
			}
		}
		if st.Until != "" {
			if err := waitUntil(w, st, lenient); err != nil {
				return fmt.Errorf("step %d: %v", i+1, err)
			}
		}
		client := fmt.Sprintf("client-%d", i+1)
		var fn func() error
		name := client
		switch {
		case st.Fault != "":
			name = "fault/" + st.Fault
			fn = func() error {
				if err := w.fault(st); err != nil && !lenient {
					return fmt.Errorf("step %d (%s): %v", i+1, st.Fault, err)
				}
				return nil
			}
		case st.Op == "setConfig":
			fn = func() error {
				if err := w.setConfig(st.Key, st.Value); err != nil {
					return fmt.Errorf("step %d: %v", i+1, err)
				}
				return nil
			}
		case st.Op != "":
			res.Cases = append(res.Cases, w.newCase(st, client))
			fn = func() error {
				if err := runOp(w, client, st); err != nil {
					return fmt.Errorf("step %d: %v", i+1, err)
				}
				return nil
			}
		default:
			continue
		}
		if st.Async {
			w.async(name, func() {
				if err := fn(); err != nil {
					mu.Lock()
					asyncErr = errors.Join(asyncErr, err)
					mu.Unlock()
				}
			})
		} else if err := fn(); err != nil {
			return err
		}
		if err := w.ended(); err != nil {
			return err
		}
	}
	w.awaitAsync()
	mu.Lock()
	defer mu.Unlock()
	return asyncErr
}

// runOp runs an op step on w: the one switch over the operations' kinds.
func runOp(w stepWorld, client string, st Step) error {
	switch st.Op {
	case "createNetwork":
		return w.createNetwork(client, st.Network)
	case "deploy":
		return w.deploy(client, st)
	case "allocate":
		return w.allocate(client, st)
	}
	return w.vmOp(client, st)
}

// untilWorld is what the one until judge reads of a world.
type untilWorld interface {
	now() time.Time
	// pause is how long the judge waits between two looks; an error ends the wait (the run ended).
	pause(d time.Duration) error
	// untilPoll is the time between two looks; untilLimit how long a condition may take.
	untilPoll() time.Duration
	untilLimit() time.Duration
	// history is what the world recorded so far (state changes, the server's log lines); nil where it
	// records neither (a world seen from outside: the records are looked at instead).
	history() []history.Event
	// untilObject names the condition's object in the history and, for start-sent, the VM's
	// instance name; false while the object does not exist yet.
	untilObject(st Step) (obj, instance string, ok bool)
	// untilHolds says whether the condition holds now, on the world's records (or log, start-sent).
	untilHolds(st Step) bool
}

// waitUntil waits for a step's until condition. Each look reads the history recorded since the last
// one, so a state that came and went between two looks still counts (an Implementing of a few
// milliseconds, a VM that ran and crashed): the condition is "the history reached it", not "it holds
// at a look"; a state reached before the step began counts if it still holds. start-sent searches the
// whole history. A lenient scenario waits 5 minutes at most and goes on.
func waitUntil(w untilWorld, st Step, lenient bool) error {
	limit := w.untilLimit()
	if lenient {
		limit = min(limit, 5*time.Minute)
	}
	deadline := w.now().Add(limit)
	scanned := len(w.history())
	if st.Until == "start-sent" {
		scanned = 0
	}
	for w.now().Before(deadline) {
		if obj, instance, ok := w.untilObject(st); ok {
			hit := untilEvent(st.Until, obj, instance)
			evs := w.history()
			for _, e := range evs[scanned:] {
				if hit(e) {
					return nil
				}
			}
			scanned = len(evs)
			if w.untilHolds(st) {
				return nil
			}
		}
		if err := w.pause(w.untilPoll()); err != nil {
			return err
		}
	}
	if lenient {
		return nil
	}
	return fmt.Errorf("condition %s not met within %s", st.Until, fmtLimit(limit))
}

// untilEvent is the event that meets a condition on obj.
func untilEvent(until, obj, instance string) func(history.Event) bool {
	if until == "start-sent" {
		sent := startSentLine(instance)
		return func(e history.Event) bool { return e.Object == obj && strings.HasPrefix(e.Detail, sent) }
	}
	to := untilStates[until]
	return func(e history.Event) bool { return e.Object == obj && e.Kind == history.State && e.To == to }
}

// untilStates are the record states the state conditions wait for.
var untilStates = map[string]string{"running": "Running", "implementing": "Implementing", "host-up": "Up"}

// startSentLine begins the server's log line of a StartCommand sent for a VM (VirtualMachineManagerImpl
// at DEBUG, "Sending StartCommand for VM ..." in CloudStack; the reference writes the instance name).
func startSentLine(instance string) string { return "Sending StartCommand for " + instance }

// fmtLimit says a limit as the messages always did: "an hour", "5 minutes".
func fmtLimit(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "an hour"
	case d%time.Minute == 0 && d < time.Hour:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
