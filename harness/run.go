package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// World is a place a scenario runs: the simulator, the reference in real time, real domains on
// libvirt, containers, an external CloudStack (harness/world names them). Run drives every world
// through it the same way: setup, steps, until conditions, settle, the world's last checks, the
// table, the expectations. A world is opened for one run (WorldDef.Open) and closed by Run.
type World interface {
	// Begin fills in what the world knows of the run before its first step: its history
	// (Result.Rec), when it starts, its scheduler.
	Begin(res *Result)
	// Drive runs fn, the scenario's setup and steps, and returns once fn has: the simulator runs
	// its scheduler until then, and a bound of steps or simulated time, or Ctrl-C, ends it with a
	// *StoppedError (Run then reports what the run had); a real world calls fn.
	Drive(fn func()) error
	// Setup creates the scenario's networks, primed or aged as it says (within Drive).
	Setup() error
	// Settle lets the cloud run on after the last step (the scenario's settle, as long as the world
	// can judge); Judge makes the world's last checks (the simulator's liveness, a real world's last
	// looks).
	Settle() error
	Judge() error
	// Finish fills the table, the violations, the run's length and the world's notes.
	Finish(res *Result)
	// LinearBounds are the staleness bounds of the linearizability check; false where the history
	// holds no writes of the server's to check (its events stay in a container).
	LinearBounds() (linear.Bounds, bool)
	// VMState is a VM's state in the records, for the expectations.
	VMState(name string) (vm.State, bool)
	// Close ends the world, whatever the outcome, and removes what the run made; it returns res and
	// err amended (what could not be removed, what an interruption removed, the server log's tail).
	Close(res *Result, err error) (*Result, error)

	// The step runner's part (runSteps, waitUntil).

	// Now is the world's clock; Wait sleeps d of it before a step; Pause is how the until judge
	// waits between two looks. An error (a real world's context ended) ends the run.
	Now() time.Time
	Wait(d time.Duration) error
	Pause(d time.Duration) error
	// UntilPoll is the time between two looks; UntilLimit how long a condition may take.
	UntilPoll() time.Duration
	UntilLimit() time.Duration
	// History is what the world recorded so far (state changes, the server's log lines); empty where
	// it records neither (a world seen from outside: its records are looked at instead).
	History() Events
	// UntilObject names the condition's object in the history and, for start-sent, the VM's
	// instance name; false while the object does not exist yet. Records is a look at the world's
	// records now, for a condition the history has not shown (a state reached before the step).
	UntilObject(st Step) (obj, instance string, ok bool)
	Records() Records
	// Fault applies a fault step; SetConfig sets a configuration key (an error where the world
	// cannot).
	Fault(st Step) error
	SetConfig(key, value string) error
	// NewCase is an op step's row of the table: the world fills what it knows (the VM's network and
	// its age where the records are at hand).
	NewCase(st Step, client string) CaseResult
	// The client operations, run as client: an operation's failure is an outcome the world records;
	// an error returned (an op the world cannot run) ends the run. VMOp is the VM operations (start,
	// startNoRetry, stop, forceStop, destroy, destroyExpunge, expunge).
	CreateNetwork(client, name string) error
	// DeleteNetwork is deleteNetwork of the network named name (its job waited for).
	DeleteNetwork(client, name string) error
	Deploy(client string, st Step) error
	Allocate(client string, st Step) error
	VMOp(client string, st Step) error
	// Async runs fn beside the next steps as a task named name; AwaitAsync returns once every fn
	// Async started has returned.
	Async(name string, fn func())
	AwaitAsync()
	// Ended is not nil once the run was ended from outside (Ctrl-C in a real world).
	Ended() error
}

// Records are a world's records as the until: conditions read them, by the scenario's names; the
// runner judges every condition the same way on them (untilHolds).
type Records interface {
	VMState(name string) (vm.State, bool)
	NetworkState(name string) (network.State, bool)
	HostStatus(name string) (host.Status, bool)
	// StartSent says a StartCommand was sent for the VM where the history cannot show it (the
	// container's server log, an external VM seen Starting); false where the history holds it.
	StartSent(vm string) bool
}

// Run runs a scenario in a world: the world's capabilities are checked first (a step it cannot run
// refuses the scenario before anything starts), then the world is opened, driven, judged and closed.
// A run stopped by a bound or Ctrl-C in the simulator returns what it had with a *StoppedError.
func Run(def WorldDef, sc *Scenario, o RunOptions) (*Result, error) {
	if def.Open == nil {
		return nil, fmt.Errorf("world %s is not opened by name", def.Name)
	}
	check := def.Preflight
	if check == nil {
		check = func(sc *Scenario, _ RunOptions) error { return def.Caps.Check(sc) }
	}
	if err := check(sc, o); err != nil {
		return nil, err
	}
	switches := def.Caps.Can(DefectSwitches)
	defects := o.Defects
	if switches && defects == nil {
		var err error
		if defects, err = impl.ProfileSwitches(o.Profile); err != nil {
			return nil, err
		}
	}
	w, err := def.Open(sc, defects, o)
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: sc.Name, Title: sc.Title, Profile: o.Profile, Seed: o.Seed}
	if switches {
		res.Defects = defects.On()
	}
	w.Begin(res)
	var stepsErr error
	err = w.Drive(func() {
		if stepsErr = w.Setup(); stepsErr == nil {
			stepsErr = runSteps(w, sc.Steps, sc.Lenient, res)
		}
	})
	if err == nil && stepsErr != nil {
		err = fmt.Errorf("scenario %s: %v", sc.Name, stepsErr)
	}
	if err == nil {
		err = w.Settle()
	}
	if err == nil {
		err = w.Judge()
	}
	if err != nil {
		var se *StoppedError
		if !errors.As(err, &se) {
			return w.Close(nil, err)
		}
		// a run that did not finish: the table so far, the violations seen
		res.Notes = append(res.Notes, "the run did not finish, this is what it had: "+err.Error())
		w.Finish(res)
		return w.Close(res, err)
	}
	w.Finish(res)
	if b, ok := w.LinearBounds(); ok && def.Caps.Runs(Linearizability) {
		res.checkLinear(res.Rec.History().All(), b)
		res.LinearChecked = true
	}
	if e, ok := sc.Expect[o.Profile]; ok && (!switches || ProfileMatches(o.Profile, defects)) {
		res.Expected = true
		res.Mismatches = e.compareWith(res, w.VMState)
	}
	return w.Close(res, nil)
}

// RunScenario runs a scenario on the simulator under a profile (or explicit switches) with a seed,
// within the default Limits: Run in the world Simulator, for the tests' brevity.
func RunScenario(sc *Scenario, profile string, defects impl.Switches, seed uint64) (*Result, error) {
	return Run(Simulator, sc, RunOptions{Profile: profile, Defects: defects, Seed: seed})
}
