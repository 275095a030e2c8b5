package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

func TestParseScenarioRejectsBadInput(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"not yaml", "name: [", "did not find"},
		{"unknown field", "name: x\nhosts: [h1]\nstepz: []\n", `unknown field "stepz" in a scenario`},
		{"no name", "hosts: [h1]\n", "no name"},
		{"no hosts", "name: x\n", "no hosts"},
		{"unknown op", "name: x\nhosts: [h1]\nsteps:\n  - op: reboot\n", "unknown op"},
		{"unknown fault", "name: x\nhosts: [h1]\nsteps:\n  - fault: meteor\n", "unknown fault"},
		{"fault missing host", "name: x\nhosts: [h1]\nsteps:\n  - fault: agent-restart\n", "needs host"},
		{"unknown host", "name: x\nhosts: [h1]\nsteps:\n  - fault: agent-restart\n    host: h9\n", "unknown host"},
		{"vm not deployed", "name: x\nhosts: [h1]\nsteps:\n  - op: start\n    vm: v1\n", "unknown vm"},
		{"unknown network", "name: x\nhosts: [h1]\nsteps:\n  - op: deploy\n    vm: v1\n    networks: [n1]\n", "unknown network"},
		{"bad config key", "name: x\nhosts: [h1]\nconfig: {ping.intervall: \"5\"}\n", "unknown configuration key"},
		{"bad config value", "name: x\nhosts: [h1]\nconfig: {ping.interval: fast}\n", "not a number"},
		{"unknown profile", "name: x\nhosts: [h1]\nexpect: {cloudstack-5: {violations: []}}\n", "unknown profile"},
		{"unknown invariant", "name: x\nhosts: [h1]\nexpect: {fixed: {violations: [meh]}}\n", "unknown invariant"},
		{"bad case result", "name: x\nhosts: [h1]\nexpect: {fixed: {violations: [], cases: {a: ok}}}\n", "result must be"},
		{"bad state", "name: x\nhosts: [h1]\nexpect: {fixed: {states: {v1: Runing}}}\n", `states: v1: unknown state "Runing"`},
		{"bad alternative", "name: x\nhosts: [h1]\nexpect: {fixed: {states: {v1: Running|}}}\n", `unknown state ""`},
		{"bad duration", "name: x\nhosts: [h1]\nsteps:\n  - wait: soon\n", `the string "soon" where a duration`},
		{"empty step", "name: x\nhosts: [h1]\nsteps:\n  - case: a\n", "nothing to do"},
		{"prime after a tested step", "name: x\nhosts: [h1]\nsteps:\n  - {wait: 1s}\n  - {wait: 1s, prime: true}\n", "step 2: prime: only leading steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(c.yaml), "test.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

// TestParseScenarioBoundsSizesAndDurations: a scenario too large to run (a 0.7 MB file of 100,000
// hosts grew to 2.9 GB) or with a negative duration is bad input, refused with the bound it passed.
func TestParseScenarioBoundsSizesAndDurations(t *testing.T) {
	hosts := func(n int) []string {
		hs := make([]string, n)
		for i := range hs {
			hs[i] = fmt.Sprintf("h%d", i+1)
		}
		return hs
	}
	deploys := make([]Step, MaxScenarioVMs+1)
	for i := range deploys {
		deploys[i] = Step{Op: "deploy", VM: fmt.Sprintf("v%d", i+1), Networks: []string{"n1"}, Async: true}
	}
	waits := make([]Step, MaxScenarioSteps+1)
	for i := range waits {
		waits[i] = Step{Wait: time.Second}
	}
	n1 := []NetworkDef{{Name: "n1"}}
	// the sizes, built rather than parsed (the YAML of 100,000 steps takes seconds to decode)
	for _, c := range []struct {
		sc   Scenario
		want string
	}{
		{Scenario{Name: "x", Hosts: hosts(MaxScenarioHosts + 1)}, fmt.Sprintf("lists %d hosts: at most %d", MaxScenarioHosts+1, MaxScenarioHosts)},
		{Scenario{Name: "x", Hosts: hosts(1), Networks: n1, Steps: deploys}, fmt.Sprintf("creates %d VMs: at most %d", MaxScenarioVMs+1, MaxScenarioVMs)},
		{Scenario{Name: "x", Hosts: hosts(1), Networks: []NetworkDef{{Name: "n1", Primed: true}}, Steps: deploys[1:]}, fmt.Sprintf("creates %d VMs: at most %d", MaxScenarioVMs+1, MaxScenarioVMs)},
		{Scenario{Name: "x", Hosts: hosts(1), Steps: waits}, fmt.Sprintf("has %d steps: at most %d", MaxScenarioSteps+1, MaxScenarioSteps)},
	} {
		if err := c.sc.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to mention %q", err, c.want)
		}
	}
	// at the bounds, accepted
	for _, sc := range []Scenario{
		{Name: "x", Hosts: hosts(MaxScenarioHosts)},
		{Name: "x", Hosts: hosts(1), Networks: n1, Steps: deploys[1:]},
		{Name: "x", Hosts: hosts(1), Steps: waits[1:]},
	} {
		if err := sc.Validate(); err != nil {
			t.Error(err)
		}
	}

	cases := []struct {
		name, yaml, want string
	}{
		{"negative settle", "name: x\nhosts: [h1]\nsettle: -5h\n", "settle -5h0m0s is negative"},
		{"negative wait", "name: x\nhosts: [h1]\nsteps:\n  - {wait: -1s, until: host-up, host: h1}\n", "step 1: wait -1s is negative"},
		{"negative duration", "name: x\nhosts: [h1]\nsteps:\n  - {fault: agent-restart, host: h1, duration: -20s}\n", "step 1: duration -20s is negative"},
		{"negative age", "name: x\nhosts: [h1]\nnetworks: [{name: n1, age: -48h}]\n", "network n1: age -48h0m0s is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(c.yaml), "test.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestParseScenarioAcceptsAUserScenario(t *testing.T) {
	sc, err := ParseScenario([]byte(`
name: mine
hosts: [h1, h2]
config: {vm.destroy.forcestop: "true", ping.interval: "10"}
networks: [{name: n1, primed: true, vm: v0, age: 48h}]
steps:
  - {op: deploy, vm: v1, networks: [n1], host: h2}
  - {fault: disconnect, host: h2, duration: 30s, async: true}
  - {case: d, op: destroyExpunge, vm: v1, wait: 2s}
  - {case: s, op: start, vm: v0}
expect:
  fixed: {violations: [], cases: {d: failed}}
`), "mine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Networks[0].Age != 48*time.Hour || sc.Steps[1].Duration != 30*time.Second {
		t.Fatalf("durations not parsed: %+v", sc)
	}
}

// Simulating a day of GC ticks, heartbeats and pings for a small cluster.
func BenchmarkSimulateDay(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c, err := NewSimCluster(Options{Seed: uint64(i), Hosts: []string{"h1", "h2", "h3"}, Defects: impl.Switches{}})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.sim().sched.RunFor(24 * time.Hour); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(c.sim().sched.Steps()), "steps/day")
		c.Close()
	}
}

// The VM model's staleness bounds are the ghost-record invariant's, from the run's ping.interval.
func TestLinearBoundsFollowPingInterval(t *testing.T) {
	for _, c := range []struct {
		ping         string
		ghost, grace time.Duration
	}{{"60", 5 * time.Minute, 130 * time.Second}, {"5", 25 * time.Second, 20 * time.Second}} {
		cfg, err := impl.NewConfig(map[string]string{"ping.interval": c.ping})
		if err != nil {
			t.Fatal(err)
		}
		if b := LinearBounds(cfg); b.Ghost != c.ghost || b.ReportGrace != c.grace || b.Ghost != GhostBound(cfg) {
			t.Errorf("ping.interval %s: %+v, want ghost %s, grace %s", c.ping, b, c.ghost, c.grace)
		}
	}
}

// An expected state of alternatives ("Running|Stopped", the interleaving's pick) is met by each of
// them and by nothing else; a single state by itself alone.
func TestExpectedStateAlternatives(t *testing.T) {
	e := Expect{States: map[string]string{"web1": "Running|Stopped", "db1": "Stopped"}}
	for _, c := range []struct {
		web1, db1 vm.State
		want      []string
	}{
		{vm.Running, vm.Stopped, nil},
		{vm.Stopped, vm.Stopped, nil},
		{vm.Error, vm.Stopped, []string{"VM web1: expected Running|Stopped, got Error"}},
		{vm.Running, vm.Running, []string{"VM db1: expected Stopped, got Running"}},
	} {
		got := e.compareWith(&Result{}, func(n string) (vm.State, bool) {
			return map[string]vm.State{"web1": c.web1, "db1": c.db1}[n], true
		})
		assert.Equal(t, c.want, got, "web1 %s, db1 %s", c.web1, c.db1)
	}
	assert.True(t, e.Open("web1"))
	assert.False(t, e.Open("db1"))
	assert.False(t, e.Open("app1"))
}
