package world

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/world/container"
	"github.com/csconform/csconform/harness/world/external"
	"github.com/csconform/csconform/model/invariant"
)

// A world refuses a scenario up front, every step it cannot run listed with why, from the one
// declaration; what it says at run time is the same refusal.
func TestCapabilitiesRefuseUpFront(t *testing.T) {
	sc, err := harness.ParseScenario([]byte(`name: s
hosts: [h1]
managementServers: 2
networks: [{name: n, primed: true}]
steps:
  - {op: deploy, vm: a, networks: [n], ha: true}
  - {op: allocate, vm: b, networks: [n]}
  - {fault: heartbeat-fail, host: h1}
  - {op: setConfig, key: ping.interval, value: "5"}
  - {fault: crash, vm: a}
`), "s.yaml")
	require.NoError(t, err)
	for _, tc := range []struct {
		world string
		want  []string // the refusal's lines, in order
	}{
		{"sim", nil},
		{"live", []string{
			"managementServers 2 (several management servers) cannot run in the live world: several management servers run only in the simulator (--driver sim)",
			"step 3 (fault heartbeat-fail) cannot run in the live world: its hosts are real machines (or the machine csconform runs on) whose power and shared-storage heartbeat csconform does not control"}},
		{"container", []string{
			"managementServers 2 (several management servers) cannot run in containers: several management servers run only in the simulator (--driver sim)",
			"network n (primed) cannot run in containers: priming waits for the network GC to shut the network down, 20 min of real time with CloudStack's values",
			"step 1 (deploy of HA-enabled VM a) cannot run in containers: the control endpoint's deploy has no HA flag (the service offering's offer_ha)",
			"step 2 (allocate b) cannot run in containers: the control endpoint deploys and starts at once",
			"step 3 (fault heartbeat-fail) cannot run in containers: there is no shared NFS primary storage whose heartbeat file the hosts write"}},
		{"external", []string{
			"managementServers 2 (several management servers) cannot run against an external CloudStack: the external CloudStack has the servers it has; run the scenario without the field",
			"network n (primed) cannot run against an external CloudStack: that needs the network GC's timing; create and shut the network down by hand",
			"step 1 (deploy of HA-enabled VM a) cannot run against an external CloudStack: the run deploys with the chosen offering; pick an HA offering instead",
			"step 3 (fault heartbeat-fail) cannot run against an external CloudStack: failing a host's heartbeat writes needs the host's NFS mount of the primary storage: csconform inject cannot",
			"step 4 (setConfig ping.interval) cannot run against an external CloudStack: changing the CloudStack's global configuration is not done from here; set it with updateConfiguration first and drop the step"}},
	} {
		t.Run(tc.world, func(t *testing.T) {
			c, err := CapabilitiesOf(tc.world)
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Refusals(sc))
			if tc.want == nil {
				assert.NoError(t, c.Check(sc))
			} else {
				assert.ErrorContains(t, c.Check(sc), "scenario s cannot run "+c.World)
			}
		})
	}
	pct, err := harness.ParseScenario([]byte("name: p\nhosts: [h1]\nscheduler: pct:3\nsteps:\n  - {wait: 1s}\n"), "p.yaml")
	require.NoError(t, err)
	assert.NoError(t, harness.SimCapabilities.Check(pct))
	assert.Equal(t, []string{"scheduler pct:3 (a strategy of the simulator's scheduler) cannot run on libvirt: " + harness.WhyRealTime}, harness.LibvirtCapabilities.Refusals(pct))
	_, err = CapabilitiesOf("vmware")
	require.EqualError(t, err, `unknown world "vmware" (one of sim, live, libvirt, container, external)`)
}

// Every world the registry names declares only faults of the catalogue, and the simulator runs every
// built-in scenario (a built-in it could not run would be a scenario no one can run).
func TestCapabilitiesDeclareCatalogueFaults(t *testing.T) {
	known := map[harness.Capability]bool{harness.PrimedNetworks: true, harness.AgedNetworks: true, harness.HAVMs: true, harness.PeerServers: true,
		harness.SetConfigOp: true, harness.AllocateOp: true, harness.MigrateOp: true, harness.RecoverOp: true, harness.DeleteNetworkOp: true, harness.VirtualTime: true, harness.DefectSwitches: true, harness.ServerLog: true}
	for _, k := range faults.Kinds {
		known[harness.FaultCap(k.Name)] = true
	}
	for _, d := range harness.Detectors() {
		known[harness.DetectorCap(d)] = true
	}
	for _, w := range Names {
		c, err := CapabilitiesOf(w)
		require.NoError(t, err)
		for k, why := range c.Lacks {
			assert.True(t, known[k], "%s lacks %q, which is no capability", w, k)
			assert.NotEmpty(t, why, "%s lacks %q without saying why", w, k)
		}
	}
	all, err := conformance.Builtin()
	require.NoError(t, err)
	for _, sc := range all {
		assert.NoError(t, harness.SimCapabilities.Check(sc))
	}
}

// The worlds are one table: each named once, said in a line, with its declaration and a way to open
// it; the simulator, found by name, runs a scenario through Run.
func TestWorldsAreOneTable(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range All {
		assert.False(t, seen[w.Name], "%s twice", w.Name)
		seen[w.Name] = true
		assert.NotEmpty(t, w.Doc, w.Name)
		assert.NotEmpty(t, w.Caps.World, w.Name)
		assert.NotNil(t, w.Open, w.Name)
	}
	assert.Equal(t, []string{"sim", "live", "libvirt", "container", "external"}, Names)
	w, err := Named("sim")
	require.NoError(t, err)
	r, err := harness.Run(w, &harness.Scenario{Name: "s", Hosts: []string{"h1"}, Steps: []harness.Step{{Wait: time.Second}}}, harness.RunOptions{Profile: "fixed", Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, "s", r.Scenario)
}

// The worlds seen from outside run the detectors they declare, no more and no fewer: a detector runs
// there when the world's source calls it (the snapshot's invariants through harness.OutsideChecks,
// which drops what harness.OutsideLacks names); linearizability is each world's LinearBounds, tested
// beside it. The in-process cluster's are harness's TestClusterWorldsDeclareTheirDetectors.
func TestOutsideWorldsRunWhatTheyDeclare(t *testing.T) {
	calls := map[string]string{ // a detector's entry point, as a world's source calls it
		invariant.StuckInTransition: "detect.StuckInTransition(",
		invariant.LeftServerJob:     "detect.LeftServerJobs(",
		invariant.UnexplainedStop:   "detect.UnexplainedStops(",
		invariant.TransitionGuard:   "detect.JudgeGuards(",
		invariant.StorageLeak:       "detect.StorageLeaks(",
		invariant.HaPromise:         "detect.HaPromise(",
	}
	for _, tc := range []struct {
		dir  string
		caps harness.Capabilities
	}{
		{"container", container.Capabilities},
		{"external", external.Capabilities},
		{"external", external.SimulatorCapabilities},
	} {
		t.Run(tc.caps.World, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(tc.dir, "*.go"))
			require.NoError(t, err)
			var src strings.Builder
			for _, f := range files {
				if !strings.HasSuffix(f, "_test.go") {
					b, err := os.ReadFile(f)
					require.NoError(t, err)
					src.Write(b)
				}
			}
			outside := strings.Contains(src.String(), "harness.OutsideChecks")
			require.True(t, outside, "a world seen from outside checks its snapshots with harness.OutsideChecks")
			for _, d := range harness.Detectors() {
				if d == harness.Linearizability {
					continue
				}
				runs := outside
				if call, ok := calls[d]; ok {
					runs = strings.Contains(src.String(), call)
				} else if _, lacks := harness.OutsideLacks[harness.DetectorCap(d)]; lacks {
					runs = false
				}
				assert.Equal(t, runs, tc.caps.Runs(d), "%s: runs %s", tc.dir, d)
			}
		})
	}
}

// docs/detectors.md's table of which world runs which detector is the declarations'.
func TestDetectorTableIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/detectors.md")
	require.NoError(t, err)
	assert.Contains(t, string(doc), DetectorTable(), "docs/detectors.md: paste DetectorTable's output")
}

// Run opens the world by its name; an unknown name is Named's error.
func TestRunByName(t *testing.T) {
	sc, err := conformance.Find("seed-004-forced-destroy")
	require.NoError(t, err)
	res, err := Run("sim", sc, harness.RunOptions{Profile: "fixed", Seed: sc.Seed})
	require.NoError(t, err)
	assert.Equal(t, sc.Name, res.Scenario)
	_, err = Run("vmware", sc, harness.RunOptions{})
	assert.ErrorContains(t, err, `unknown world "vmware"`)
}
