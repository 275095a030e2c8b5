package harness

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/vm"
)

// fakeRun is a World whose lifecycle is scripted: what Run calls, in order, is in did.
type fakeRun struct {
	*fakeSteps
	settleErr error
	linear    bool
	closed    error
}

func (f *fakeRun) Begin(res *Result) {
	f.did = append(f.did, "begin")
	res.Rec = NewRecorder(f.Now)
}
func (f *fakeRun) Drive(fn func()) error           { f.did = append(f.did, "drive"); fn(); return nil }
func (f *fakeRun) Setup() error                    { f.did = append(f.did, "setup"); return nil }
func (f *fakeRun) Settle() error                   { f.did = append(f.did, "settle"); return f.settleErr }
func (f *fakeRun) Judge() error                    { f.did = append(f.did, "judge"); return nil }
func (f *fakeRun) Finish(*Result)                  { f.did = append(f.did, "finish") }
func (f *fakeRun) VMState(string) (vm.State, bool) { return vm.Running, true }
func (f *fakeRun) LinearBounds() (linear.Bounds, bool) {
	f.did = append(f.did, "linear")
	return linear.Bounds{}, f.linear
}
func (f *fakeRun) Close(res *Result, err error) (*Result, error) {
	f.did = append(f.did, "close")
	f.closed = err
	return res, err
}

// Run drives every world through the same lifecycle: refused up front, opened, set up, stepped,
// settled, judged, finished, compared with the expectations of the profile it ran, closed whatever
// the outcome. A world that runs no reference switches (an external CloudStack) is compared with the
// profile it is told.
func TestRunDrivesEveryWorldTheSameWay(t *testing.T) {
	sc := &Scenario{Name: "s", Hosts: []string{"h1"}, Steps: []Step{{Op: "deploy", VM: "a"}},
		Expect: map[string]Expect{"fixed": {}, "cloudstack-4.22": {}}}
	boom := errors.New("boom")
	noSwitches := Capabilities{World: "outside", Lacks: map[Capability]string{DefectSwitches: "its own code"}}
	for _, tc := range []struct {
		name     string
		caps     Capabilities
		sc       *Scenario
		o        RunOptions
		world    fakeRun
		did      []string
		err      string // in the error ("": none)
		expected bool
		defects  bool // res.Defects said
		partial  bool // a result beside the error
	}{
		{name: "a run", caps: SimCapabilities, sc: sc, o: RunOptions{Profile: "cloudstack-4.22"}, world: fakeRun{linear: true},
			did:      []string{"begin", "drive", "setup", "client-1 deploy", "settle", "judge", "finish", "linear", "close"},
			expected: true, defects: true},
		{name: "switches that are not the profile's: no expectations", caps: SimCapabilities, sc: sc,
			o:     RunOptions{Profile: "fixed", Defects: impl.Switches{impl.D1: true}},
			did:   []string{"begin", "drive", "setup", "client-1 deploy", "settle", "judge", "finish", "linear", "close"},
			world: fakeRun{linear: true}, defects: true},
		{name: "a world without switches is judged against the profile it is told", caps: noSwitches, sc: sc,
			o:     RunOptions{Profile: "fixed"},
			did:   []string{"begin", "drive", "setup", "client-1 deploy", "settle", "judge", "finish", "linear", "close"},
			world: fakeRun{}, expected: true},
		{name: "a failed step ends the run: closed with the error", caps: SimCapabilities,
			sc: &Scenario{Name: "s", Hosts: []string{"h1"}, Steps: []Step{{Fault: "agent-restart", Host: "h1"}}},
			o:  RunOptions{Profile: "fixed"}, world: fakeRun{fakeSteps: &fakeSteps{faultFn: func(Step) error { return boom }}},
			did: []string{"begin", "drive", "setup", "fault agent-restart", "close"},
			err: "scenario s: step 1 (agent-restart): boom"},
		{name: "stopped at its bound: what it had", caps: SimCapabilities, sc: sc, o: RunOptions{Profile: "fixed"},
			world: fakeRun{settleErr: &StoppedError{Reason: "bound"}},
			did:   []string{"begin", "drive", "setup", "client-1 deploy", "settle", "finish", "close"},
			err:   "bound", partial: true},
		{name: "refused up front: nothing opened", caps: LiveCapabilities,
			sc:  &Scenario{Name: "s", Hosts: []string{"h1"}, Steps: []Step{{Fault: "heartbeat-fail", Host: "h1"}}},
			err: "step 1 (fault heartbeat-fail) cannot run in the live world"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world
			if w.fakeSteps == nil {
				w.fakeSteps = &fakeSteps{}
			}
			opened := false
			def := WorldDef{Name: "fake", Caps: tc.caps, Open: func(*Scenario, impl.Switches, RunOptions) (World, error) {
				opened = true
				return &w, nil
			}}
			res, err := Run(def, tc.sc, tc.o)
			assert.Equal(t, tc.did, w.did)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Equal(t, tc.partial, res != nil)
				if res != nil {
					assert.True(t, strings.HasPrefix(res.Notes[0], "the run did not finish"), res.Notes)
				}
				if opened {
					assert.Equal(t, err, w.closed, "closed with the run's error")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.expected, res.Expected)
			assert.Equal(t, tc.world.linear, res.LinearChecked)
			assert.Equal(t, tc.defects, res.Defects != nil, "defects %v", res.Defects)
		})
	}
}
