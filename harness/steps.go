package harness

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// runSteps runs a scenario's steps on w: waits, until conditions, faults, configuration changes and
// client operations (each a row of res's table); async steps run beside the next ones and are waited
// for at the end. A fault's error ends the run unless the scenario is lenient; an op's failure is an
// outcome, never an error of the run.
func runSteps(w World, steps []Step, lenient bool, res *Result) error {
	var mu sync.Mutex // async steps run on real goroutines in a real world
	var asyncErr error
	p, primes := w.(Primer)
	primes = primes && len(steps) > 0 && steps[0].Prime
	if primes {
		p.Prime(true)
	}
	for i, st := range steps {
		if primes && !st.Prime {
			w.AwaitAsync() // an async prime step is set-up too
			p.Prime(false)
			primes = false
		}
		if st.Wait > 0 {
			if err := w.Wait(st.Wait); err != nil {
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
				if err := w.Fault(st); err != nil && !lenient {
					return fmt.Errorf("step %d (%s): %v", i+1, st.Fault, err)
				}
				return nil
			}
		case st.Op == "setConfig":
			fn = func() error {
				if err := w.SetConfig(st.Key, st.Value); err != nil {
					return fmt.Errorf("step %d: %v", i+1, err)
				}
				return nil
			}
		case st.Op != "":
			res.Cases = append(res.Cases, w.NewCase(st, client))
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
			w.Async(name, func() {
				if err := fn(); err != nil {
					mu.Lock()
					asyncErr = errors.Join(asyncErr, err)
					mu.Unlock()
				}
			})
		} else if err := fn(); err != nil {
			return err
		}
		if err := w.Ended(); err != nil {
			return err
		}
	}
	w.AwaitAsync()
	if primes {
		p.Prime(false)
	}
	mu.Lock()
	defer mu.Unlock()
	return asyncErr
}

// Primer is a world that runs a scenario's set-up differently from its steps under test (real
// domains scale CloudStack's timings while priming): Prime(true) before the leading prime steps,
// Prime(false) after them.
type Primer interface {
	Prime(on bool)
}

// runOp runs an op step on w: the one switch over the operations' kinds.
func runOp(w World, client string, st Step) error {
	switch st.Op {
	case "createNetwork":
		return w.CreateNetwork(client, st.Network)
	case "deleteNetwork":
		return w.DeleteNetwork(client, st.Network)
	case "deploy":
		return w.Deploy(client, st)
	case "allocate":
		return w.Allocate(client, st)
	}
	return w.VMOp(client, st)
}

// waitUntil waits for a step's until condition. Each look reads the history recorded since the last
// one, so a state that came and went between two looks still counts (an Implementing of a few
// milliseconds, a VM that ran and crashed): the condition is "the history reached it", not "it holds
// at a look"; a state reached before the step began counts if it still holds. start-sent searches the
// whole history; log only what was written since the step began. A lenient scenario waits 5 minutes at most and goes on.
func waitUntil(w World, st Step, lenient bool) error {
	limit := w.UntilLimit()
	if lenient {
		limit = min(limit, 5*time.Minute)
	}
	deadline := w.Now().Add(limit)
	scanned := w.History().Len()
	if st.Until == "start-sent" {
		scanned = 0
	}
	for w.Now().Before(deadline) {
		if obj, instance, ok := w.UntilObject(st); ok {
			hit := untilEvent(st, obj, instance)
			evs := w.History()
			for e := range evs.From(scanned) {
				if hit(e) {
					return nil
				}
			}
			scanned = evs.Len()
			if untilHolds(w.Records(), st) {
				return nil
			}
		}
		if err := w.Pause(w.UntilPoll()); err != nil {
			return err
		}
	}
	if lenient {
		return nil
	}
	return fmt.Errorf("condition %s not met within %s", st.Until, fmtLimit(limit))
}

// untilHolds says whether a condition holds in the records now.
func untilHolds(r Records, st Step) bool {
	switch st.Until {
	case "running":
		s, ok := r.VMState(st.VM)
		return ok && s == vm.Running
	case "implementing":
		s, ok := r.NetworkState(st.Network)
		return ok && s == network.Implementing
	case "host-up":
		s, ok := r.HostStatus(st.Host)
		return ok && s == host.Up
	case "start-sent":
		return r.StartSent(st.VM)
	}
	return false
}

// untilEvent is the event that meets a condition on obj.
func untilEvent(st Step, obj, instance string) func(history.Event) bool {
	until := st.Until
	if until == "log" {
		line := st.Line // not st: a closure over st moved every call's whole Step to the heap
		return func(e history.Event) bool {
			return e.Kind == history.Log && (obj == "" || e.Object == obj) && strings.Contains(e.Detail, line)
		}
	}
	if until == "start-sent" {
		sent := StartSentLine(instance)
		return func(e history.Event) bool { return e.Object == obj && strings.HasPrefix(e.Detail, sent) }
	}
	to := untilStates[until]
	return func(e history.Event) bool { return e.Object == obj && e.Kind == history.State && e.To == to }
}

// untilStates are the record states the state conditions wait for.
var untilStates = map[string]string{"running": "Running", "implementing": "Implementing", "host-up": "Up"}

// StartSentLine begins the server's log line of a StartCommand sent for a VM (VirtualMachineManagerImpl
// at DEBUG, "Sending StartCommand for VM ..." in CloudStack; the reference writes the instance name).
func StartSentLine(instance string) string { return "Sending StartCommand for " + instance }

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
