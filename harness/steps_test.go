package harness

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// fakeSteps is a world for the step runner with a clock that moves only when the runner waits: what
// it does at each moment is scripted by at.
type fakeSteps struct {
	World   // the runner's lifecycle: not called by runSteps
	t       time.Time
	at      func(w *fakeSteps) // called after each pause, to change the world
	events  []history.Event
	hist    Events // events as the recorder holds them: appended to, never rebuilt
	exists  bool   // the condition's object exists
	holds   bool   // the records say the condition holds
	did     []string
	faultFn func(Step) error
	opFn    func(Step) error
	tasks   []func()
}

func (f *fakeSteps) Now() time.Time { return f.t }
func (f *fakeSteps) Pause(d time.Duration) error {
	f.t = f.t.Add(d)
	if f.at != nil {
		f.at(f)
	}
	return nil
}
func (f *fakeSteps) UntilPoll() time.Duration  { return 50 * time.Millisecond }
func (f *fakeSteps) UntilLimit() time.Duration { return time.Hour }

// History takes in the events scripted since the last look, so a look costs what it adds, as the
// recorder's snapshot does; rebuilding it at each look made an hour of 50 ms looks quadratic.
func (f *fakeSteps) History() Events {
	for _, e := range f.events[f.hist.Len():] {
		f.hist.add(e)
	}
	return f.hist.snapshot()
}
func (f *fakeSteps) UntilObject(Step) (string, string, bool) {
	return "vm:1", "i-2-1-VM", f.exists
}
func (f *fakeSteps) Records() Records { return fakeRecords(f.holds) }

// fakeRecords say every condition holds, or none.
type fakeRecords bool

func (r fakeRecords) VMState(string) (vm.State, bool) {
	return map[bool]vm.State{true: vm.Running, false: vm.Stopped}[bool(r)], true
}
func (r fakeRecords) NetworkState(string) (network.State, bool) {
	return map[bool]network.State{true: network.Implementing, false: network.Allocated}[bool(r)], true
}
func (r fakeRecords) HostStatus(string) (host.Status, bool) {
	return map[bool]host.Status{true: host.Up, false: host.Disconnected}[bool(r)], true
}
func (r fakeRecords) StartSent(string) bool { return bool(r) }

func (f *fakeSteps) Wait(d time.Duration) error  { return f.Pause(d) }
func (f *fakeSteps) SetConfig(k, v string) error { f.did = append(f.did, "config "+k); return nil }
func (f *fakeSteps) Async(name string, fn func()) {
	f.did = append(f.did, "async "+name)
	f.tasks = append(f.tasks, fn)
}
func (f *fakeSteps) Ended() error { return nil }
func (f *fakeSteps) NewCase(st Step, client string) CaseResult {
	return CaseResult{Op: st.Op, VM: st.VM, client: client}
}
func (f *fakeSteps) Fault(st Step) error {
	f.did = append(f.did, "fault "+st.Fault)
	if f.faultFn != nil {
		return f.faultFn(st)
	}
	return nil
}
func (f *fakeSteps) op(client string, st Step) error {
	f.did = append(f.did, client+" "+st.Op)
	if f.opFn != nil {
		return f.opFn(st)
	}
	return nil
}
func (f *fakeSteps) CreateNetwork(client, name string) error {
	return f.op(client, Step{Op: "createNetwork", Network: name})
}
func (f *fakeSteps) DeleteNetwork(client, name string) error {
	return f.op(client, Step{Op: "deleteNetwork", Network: name})
}
func (f *fakeSteps) Deploy(client string, st Step) error   { return f.op(client, st) }
func (f *fakeSteps) Allocate(client string, st Step) error { return f.op(client, st) }
func (f *fakeSteps) VMOp(client string, st Step) error {
	f.did = append(f.did, "vm-op")
	return f.op(client, st)
}
func (f *fakeSteps) AwaitAsync() {
	for _, fn := range f.tasks {
		fn()
	}
	f.tasks = nil
}

func state(obj, to string) history.Event {
	return history.Event{Kind: history.State, Object: obj, To: to}
}

// The one until judge, as every world uses it: a state that came and went between two looks counts,
// one reached before the step counts only while it holds, start-sent reads the whole history.
func TestWaitUntilJudgesTheHistoryAndTheRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		until   string
		lenient bool
		before  []history.Event // recorded before the step
		at      func(w *fakeSteps)
		took    time.Duration // when the wait ends (-1: not met)
	}{
		{name: "a Running that came and went between two looks", until: "running",
			at: func(w *fakeSteps) {
				if w.t.Sub(time.Time{}) == 100*time.Millisecond {
					w.exists = true
					w.events = append(w.events, state("vm:1", "Running"), state("vm:1", "Stopped"))
				}
			}, took: 100 * time.Millisecond},
		{name: "a Running before the step, gone: not met", until: "running",
			before: []history.Event{state("vm:1", "Running"), state("vm:1", "Stopped")},
			at:     func(w *fakeSteps) { w.exists = true }, took: -1},
		{name: "the records hold", until: "running",
			at: func(w *fakeSteps) { w.exists, w.holds = true, w.t.Sub(time.Time{}) >= time.Second }, took: time.Second},
		{name: "events before the object exists are read once it does", until: "implementing",
			at: func(w *fakeSteps) {
				if w.t.Sub(time.Time{}) == 50*time.Millisecond {
					w.events = append(w.events, state("vm:1", "Implementing"))
				}
				w.exists = w.t.Sub(time.Time{}) >= 200*time.Millisecond
			}, took: 200 * time.Millisecond},
		{name: "start-sent before the step", until: "start-sent",
			before: []history.Event{{Kind: history.Log, Object: "vm:1", Detail: "Sending StartCommand for i-2-1-VM to host 1"}},
			at:     func(w *fakeSteps) { w.exists = true }, took: 0},
		{name: "a state of another object", until: "running",
			at: func(w *fakeSteps) { w.exists = true; w.events = append(w.events, state("vm:2", "Running")) }, took: -1},
		{name: "lenient: gives up after 5 minutes", until: "running", lenient: true, took: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fakeSteps{events: tc.before, at: tc.at}
			if tc.at != nil && tc.took == 0 {
				tc.at(w)
			}
			err := waitUntil(w, Step{Until: tc.until, VM: "v"}, tc.lenient)
			if tc.took < 0 {
				require.EqualError(t, err, "condition "+tc.until+" not met within an hour")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.took, w.t.Sub(time.Time{}))
		})
	}
}

// The one step runner: a fault's error ends a strict run and not a lenient one, an op's error (an op
// the world cannot run) ends any run, async steps' errors come back at the end, and every op is a row.
func TestRunStepsSaysWhichStepFailed(t *testing.T) {
	boom := errors.New("boom")
	steps := []Step{
		{Op: "deploy", VM: "a"},
		{Fault: "crash", VM: "a"},
		{Op: "setConfig", Key: "k", Value: "1"},
		{Op: "stop", VM: "a", Async: true},
		{Fault: "agent-restart", Host: "h1", Async: true},
	}
	for _, tc := range []struct {
		name    string
		lenient bool
		fault   error
		op      error
		want    string
		did     []string
	}{
		{name: "all well", did: []string{"client-1 deploy", "fault crash", "config k", "async client-4", "async fault/agent-restart", "vm-op", "client-4 stop", "fault agent-restart"}},
		{name: "a fault fails", fault: boom, want: "step 2 (crash): boom", did: []string{"client-1 deploy", "fault crash"}},
		{name: "a fault fails, lenient", lenient: true, fault: boom,
			did: []string{"client-1 deploy", "fault crash", "config k", "async client-4", "async fault/agent-restart", "vm-op", "client-4 stop", "fault agent-restart"}},
		{name: "an op cannot run", op: boom, want: "step 1: boom", did: []string{"client-1 deploy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fakeSteps{faultFn: func(Step) error { return tc.fault }, opFn: func(Step) error { return tc.op }}
			res := &Result{}
			err := runSteps(w, steps, tc.lenient, res)
			if tc.want == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tc.want)
			}
			assert.Equal(t, tc.did, w.did)
		})
	}
	t.Run("an async fault fails", func(t *testing.T) {
		w := &fakeSteps{faultFn: func(st Step) error {
			if st.Async {
				return boom
			}
			return nil
		}}
		res := &Result{}
		require.EqualError(t, runSteps(w, steps, false, res), "step 5 (agent-restart): boom")
		assert.Equal(t, []string{"a", "a"}, []string{res.Cases[0].VM, res.Cases[1].VM})
		assert.Equal(t, []string{"client-1", "client-4"}, []string{res.Cases[0].client, res.Cases[1].client})
	})
}

// runOp routes each kind to its world call: network creations and deletions, deploys and allocations to their own, every
// other kind to the VM operations.
func TestRunOpRoutesEachKind(t *testing.T) {
	for _, op := range Ops {
		if op == "setConfig" {
			continue // a step of its own, not an operation
		}
		w := &fakeSteps{}
		require.NoError(t, runOp(w, "c", Step{Op: op, VM: "a", Network: "n"}))
		want := []string{"c " + op}
		if !slices.Contains([]string{"createNetwork", "deleteNetwork", "deploy", "allocate"}, op) {
			want = append([]string{"vm-op"}, want...)
		}
		assert.Equal(t, want, w.did, op)
	}
}

// recordsOf are records of one VM, network and host by name.
type recordsOf struct {
	vm      vm.State
	network network.State
	host    host.Status
	sent    bool
}

func (r recordsOf) VMState(name string) (vm.State, bool) { return r.vm, name == "v1" && r.vm != "" }
func (r recordsOf) NetworkState(name string) (network.State, bool) {
	return r.network, name == "n1" && r.network != ""
}
func (r recordsOf) HostStatus(name string) (host.Status, bool) {
	return r.host, name == "h1" && r.host != ""
}
func (r recordsOf) StartSent(name string) bool { return name == "v1" && r.sent }

// Every world's records are judged by the one switch: each condition reads its own object, by the
// scenario's name, and holds only in its target state.
func TestUntilHoldsReadsEachConditionsObject(t *testing.T) {
	all := recordsOf{vm: vm.Running, network: network.Implementing, host: host.Up, sent: true}
	for _, tc := range []struct {
		name string
		st   Step
		r    Records
		want bool
	}{
		{"running", Step{Until: "running", VM: "v1"}, all, true},
		{"running: another VM", Step{Until: "running", VM: "v2"}, all, false},
		{"running: Starting", Step{Until: "running", VM: "v1"}, recordsOf{vm: vm.Starting}, false},
		{"implementing", Step{Until: "implementing", Network: "n1"}, all, true},
		{"implementing: Implemented", Step{Until: "implementing", Network: "n1"}, recordsOf{network: network.Implemented}, false},
		{"implementing: another network", Step{Until: "implementing", Network: "n2"}, all, false},
		{"host-up", Step{Until: "host-up", Host: "h1"}, all, true},
		{"host-up: Disconnected", Step{Until: "host-up", Host: "h1"}, recordsOf{host: host.Disconnected}, false},
		{"host-up: unknown host", Step{Until: "host-up", Host: "h9"}, all, false},
		{"start-sent", Step{Until: "start-sent", VM: "v1"}, all, true},
		{"start-sent: not sent", Step{Until: "start-sent", VM: "v1"}, recordsOf{vm: vm.Running}, false},
		{"running does not read the network", Step{Until: "running", VM: "v1"}, recordsOf{network: network.Implementing, host: host.Up, sent: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, untilHolds(tc.r, tc.st))
		})
	}
}

// primingSteps is fakeSteps that primes: it says when the set-up's scaling is switched.
type primingSteps struct{ fakeSteps }

func (p *primingSteps) Prime(on bool) {
	p.did = append(p.did, map[bool]string{true: "prime", false: "end prime"}[on])
}

// The leading prime steps run between Prime(true) and Prime(false), their async ones awaited first;
// a scenario of prime steps only ends its priming too, and a world that does not prime runs them as
// any step.
func TestRunStepsPrimesTheLeadingPrimeSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []Step
		did   []string
	}{
		{"prime then test", []Step{{Op: "deploy", VM: "p", Prime: true}, {Op: "destroy", VM: "p", Async: true, Prime: true}, {Op: "deploy", VM: "a"}},
			[]string{"prime", "client-1 deploy", "async client-2", "vm-op", "client-2 destroy", "end prime", "client-3 deploy"}},
		{"prime only", []Step{{Op: "deploy", VM: "p", Prime: true}}, []string{"prime", "client-1 deploy", "end prime"}},
		{"no prime", []Step{{Op: "deploy", VM: "a"}}, []string{"client-1 deploy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &primingSteps{}
			require.NoError(t, runSteps(w, tc.steps, false, &Result{}))
			assert.Equal(t, tc.did, w.did)
		})
	}
	plain := &fakeSteps{}
	require.NoError(t, runSteps(plain, []Step{{Op: "deploy", VM: "p", Prime: true}}, false, &Result{}))
	assert.Equal(t, []string{"client-1 deploy"}, plain.did)
}
