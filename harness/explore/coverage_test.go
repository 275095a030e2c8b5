package explore

import (
	"slices"
	"testing"
	"time"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoverageCountsTheModelTables: M is the size of the model tables, each machine's share too.
func TestCoverageCountsTheModelTables(t *testing.T) {
	s := NewCoverage().Summary()
	doneJobs := 0
	for _, st := range job.Statuses() {
		if st.Done() {
			doneJobs++
		}
	}
	want := map[Machine]int{MachineVM: len(vm.Transitions), MachineNetwork: len(network.Transitions), MachineHost: len(host.Transitions), MachineJob: doneJobs}
	require.Equal(t, len(vm.Transitions)+len(network.Transitions)+len(host.Transitions)+doneJobs, s.Total)
	for _, m := range s.Machines {
		assert.Equal(t, want[m.Machine], m.Total, "%s", m.Machine)
		assert.Zero(t, m.Reached)
	}
	assert.Len(t, s.Unreached, s.Total)
}

// TestCoverageReadsTheStoresEvents: a state change is a row as impl's store records it; one no table
// explains counts for nothing.
func TestCoverageReadsTheStoresEvents(t *testing.T) {
	cases := []struct {
		name string
		e    history.Event
		want string // "" no row
	}{
		{"vm start", history.Event{Kind: history.State, Object: "vm:3", From: "Stopped", To: "Starting", Detail: "vm1 StartRequested host=h1"}, "vm: Stopped -StartRequested-> Starting"},
		{"vm created", history.Event{Kind: history.State, Object: "vm:3", To: "Stopped", Detail: "created vm1"}, ""},
		{"vm expunged", history.Event{Kind: history.State, Object: "vm:3", From: "Expunging", To: "Expunged", Detail: "vm1 removed"}, ""},
		{"vm no such row", history.Event{Kind: history.State, Object: "vm:3", From: "Stopped", To: "Running", Detail: "vm1 OperationSucceeded host=h1"}, ""},
		{"network", history.Event{Kind: history.State, Object: "network:2", From: "Allocated", To: "Implementing", Detail: "implementNetwork"}, "network: Allocated -ImplementNetwork-> Implementing"},
		{"network set directly", history.Event{Kind: history.State, Object: "network:2", From: "Implementing", To: "Shutdown", Direct: true}, ""},
		{"host first status", history.Event{Kind: history.State, Object: "host:h1", To: "Connecting", Detail: "AgentConnected"}, "host: (new) -AgentConnected-> Connecting"},
		{"host", history.Event{Kind: history.State, Object: "host:h1", From: "Up", To: "Alert", Detail: "PingTimeout"}, "host: Up -PingTimeout-> Alert"},
		{"job", history.Event{Kind: history.State, Object: "job:9", From: "IN_PROGRESS", To: "FAILED"}, "job: IN_PROGRESS -> FAILED"},
		{"job created", history.Event{Kind: history.State, Object: "job:9", To: "IN_PROGRESS"}, ""},
		{"volume", history.Event{Kind: history.State, Object: "volume:4", From: "Allocated", To: "Ready"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			for tr := range CaseCoverage(slices.Values([]history.Event{c.e})).Hit {
				got = tr.String()
			}
			assert.Equal(t, c.want, got)
		})
	}
	logs := CaseCoverage(slices.Values([]history.Event{
		{Kind: history.Log, Level: "DEBUG", Detail: "Network 7 is still free"},
		{Kind: history.Log, Level: "DEBUG", Detail: "Network 12 is still free"},
		{Kind: history.Log, Level: "WARN", Detail: "Network 12 is still free"},
	})).Logs
	assert.Equal(t, map[string]bool{"DEBUG Network # is still free": true, "WARN Network # is still free": true}, logs)
}

// TestCoverageGrowsWithTheProgram: a richer program reaches more transitions than a lone deploy, and
// every one a lone deploy reaches.
func TestCoverageGrowsWithTheProgram(t *testing.T) {
	trivial := &harness.Scenario{Name: "trivial", Seed: 1, Hosts: []string{"h1"}, Networks: []harness.NetworkDef{{Name: "net1"}},
		Steps: []harness.Step{{Op: "deploy", VM: "vm1", Networks: []string{"net1"}, Host: "h1"}}}
	rich := &harness.Scenario{Name: "rich", Seed: 1, Hosts: []string{"h1", "h2"}, Lenient: true,
		Config:   map[string]string{"network.gc.interval": "30", "network.gc.wait": "30", "alert.wait": "60"},
		Networks: []harness.NetworkDef{{Name: "net1"}, {Name: "net2"}},
		Steps: []harness.Step{
			{Op: "deploy", VM: "vm1", Networks: []string{"net1"}, Host: "h1"},
			{Op: "deploy", VM: "vm2", Networks: []string{"net1", "net2"}, Host: "h2"},
			{Op: "stop", VM: "vm2"},
			{Op: "start", VM: "vm2", Async: true},
			{Until: "start-sent", VM: "vm2"},
			{Fault: "ms-restart", Duration: 20 * time.Second},
			{Fault: "disconnect", Host: "h1", Duration: 200 * time.Second},
			{Op: "destroyExpunge", VM: "vm1"},
			{Wait: 5 * time.Minute},
		}}
	fixed := Options{Profile: "fixed", Defects: impl.Switches{}}
	cov := func(sc *harness.Scenario) *Coverage {
		out, err := Run(sc, fixed)
		require.NoError(t, err)
		return CaseCoverage(eventsOf(out.Result))
	}
	a, b := cov(trivial), cov(rich)
	sa, sb := a.Summary(), b.Summary()
	t.Logf("trivial: %s\nrich: %s", sa.Text(), sb.Text())
	assert.Greater(t, sa.Reached, 0)
	assert.Greater(t, sb.Reached, sa.Reached)
	assert.Greater(t, sb.LogKinds, sa.LogKinds)
	newT, _ := b.Merge(a)
	assert.Zero(t, newT, "the lone deploy reached a transition the richer program did not")
}
