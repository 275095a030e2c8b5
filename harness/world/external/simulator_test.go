package external

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/cloudclient"
	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/history"
)

// Every catalogue fault says whether the simulator can carry it and, if not, why; the built-in seeds
// that need what it cannot say are refused up front, each step with its reason, and no host access
// is asked for.
func TestSimulatorFaultsPreflight(t *testing.T) {
	for _, k := range faults.Kinds {
		ok, text := SimulatorMapping(k.Name)
		if text == "" || strings.Contains(text, "unknown") {
			t.Errorf("fault %s: no simulator mapping (%v %q)", k.Name, ok, text)
		}
		if ok != SimulatorCapabilities.Can(harness.FaultCap(k.Name)) {
			t.Errorf("fault %s: the mapping and the capabilities disagree", k.Name)
		}
	}
	parse := func(y string) *harness.Scenario {
		sc, err := harness.ParseScenario([]byte(y), "test")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	sim := Options{Faults: FaultsSimulator}
	cases := []struct {
		name string
		sc   *harness.Scenario
		want []string // nil: runs
	}{
		{"seed-001", loadScenario(t, "seed-001-stale-power-report"), []string{
			// DirectAgentAttache.PingTask (apache/cloudstack 0526416e): getCurrentStatus, then handleCommands
			"step 2 (fault stale-report) cannot run through CloudStack's simulator (--faults simulator): a mock acts on the commands the server sends; the simulator's agent reports only in its ping, collected and processed in one go",
			// MockVmManagerImpl.startVM / stopVM (apache/cloudstack 2882da64): the only writes of a mock VM's power state
			"step 5 (fault crash) cannot run through CloudStack's simulator (--faults simulator): the simulator's VMs are rows of its mock database whose power state changes only when the server starts or stops them"}},
		{"seed-004", loadScenario(t, "seed-004-forced-destroy"), []string{"step 2 (fault agent-restart) cannot run through CloudStack's simulator (--faults simulator): the simulator's agents are direct agents"}},
		{"seed-000", loadScenario(t, "seed-000-ab"), []string{"(primed) cannot run through CloudStack's simulator"}},
		{"seed-004's simulator variant, no host access", loadScenario(t, "seed-004-forced-destroy-simulator"), nil},
		{"host-unreachable, no host access", parse("name: u\nhosts: [h1]\nsteps:\n  - {fault: host-unreachable, host: h1, duration: 1m}\n  - {fault: slow-router-boot, duration: 40s}\n"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sim.Preflight(tc.sc, "")
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("not refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := ParseFaultSource("ssh"); err == nil || !strings.Contains(err.Error(), "one of inject, simulator") {
		t.Errorf("ParseFaultSource(ssh) = %v", err)
	}
}

// bridge is a scenario the simulator can carry: routers and VMs slow to start, then the host's pings
// and health checks failing past the ping timeout.
const bridge = `name: bridge
title: slow starts, then a host that stops pinging
hosts: [h1]
networks: [{name: net1}]
steps:
  - fault: slow-router-boot
    duration: 30s
  - {case: deploy, op: deploy, vm: web1, networks: [net1], host: h1}
  - fault: host-unreachable
    host: h1
    duration: 4m
  - {case: destroy, op: destroyExpunge, vm: web1}
settle: 10s
`

// The bridge end to end against the reference server's API face in the live world (20× clock): the
// faults go through configureSimulator, act on the reference's agents (the deploy waits for its
// StartCommands, the host leaves Up while its pings fail), are in the history, and no mock is left
// once the run ends — nor after a Ctrl-C in the middle of a fault.
func TestSimulatorBridge(t *testing.T) {
	tier.Need(t, tier.Long) // the live world, ~15 s of real time, mostly waiting: beside the seeds' runs
	t.Parallel()
	sc, err := harness.ParseScenario([]byte(bridge), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := startReference(t, sc, "fixed")
	url, creds, _ := c.APIEndpoint()
	var log strings.Builder
	res, err := harness.Run(Def, sc, harness.RunOptions{Own: &Options{
		API:   cloudclient.Options{URL: url, APIKey: creds.APIKey, SecretKey: creds.SecretKey},
		Hosts: liveHosts(c), Faults: FaultsSimulator,
		Log: &log, Now: c.Now, Speed: 20, Poll: 100 * time.Millisecond,
	}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var text strings.Builder
	res.WriteText(&text, res.Started)
	t.Logf("%s", text.String())
	if len(res.Violations) > 0 || len(res.Leftovers) > 0 {
		t.Errorf("violations %v, leftovers %v", res.Violations, res.Leftovers)
	}
	if m := c.DB.Mocks.Active(); len(m) > 0 {
		t.Errorf("mocks left after the run: %+v", m)
	}
	var faultDetails []string
	hostLeftUp := false
	for _, e := range res.Rec.History().Slice() {
		if e.Kind == history.Fault && e.To != "" {
			faultDetails = append(faultDetails, e.Detail)
		}
		if e.Kind == history.State && e.Object == "host:h1" && e.To != "Up" {
			hostLeftUp = true
		}
	}
	var deployTook time.Duration
	for _, op := range res.Rec.Ops {
		if op.Kind == "deploy" {
			deployTook = op.Return.Sub(op.Call)
		}
	}
	if !slices.ContainsFunc(faultDetails, func(s string) bool { return strings.Contains(s, "StartCommand wait:30000") }) ||
		!slices.ContainsFunc(faultDetails, func(s string) bool {
			return strings.Contains(s, "PingCommand result:fail") && strings.Contains(s, "CheckHealthCommand result:fail")
		}) {
		t.Errorf("the faults' mocks are not in the history: %q", faultDetails)
	}
	if deployTook < 30*time.Second {
		t.Errorf("the deploy took %s under a 30 s StartCommand wait", deployTook)
	}
	if !hostLeftUp {
		t.Errorf("h1 never left Up while its pings failed")
	}

	// Ctrl-C during a fault: the mocks go at once
	long, err := harness.ParseScenario([]byte("name: long\nhosts: [h1]\nsteps:\n  - {fault: host-unreachable, host: h1, duration: 1h}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for range 600 {
			if len(c.DB.Mocks.Active()) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	// (and no source of the hosts' domains, as against a Java simulator)
	_, err = harness.Run(Def, long, harness.RunOptions{Own: &Options{
		API:    cloudclient.Options{URL: url, APIKey: creds.APIKey, SecretKey: creds.SecretKey},
		Faults: FaultsSimulator, Ctx: ctx, Now: c.Now, Speed: 20, Poll: 100 * time.Millisecond,
	}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if m := c.DB.Mocks.Active(); len(m) > 0 {
		t.Errorf("mocks left after Ctrl-C: %+v", m)
	}
}

// A mock with result:fail and a count, on the reference's own agent (SimulatorManagerImpl.simulate
// @1510b44f): the host's next StopCommand answers "Simulated failure" without reaching the agent, the
// one after runs (the count is used up), and the VM stops.
func TestSimulatorStopFails(t *testing.T) {
	tier.Need(t, tier.Long) // the live world, a few seconds
	t.Parallel()
	sc, err := harness.ParseScenario([]byte("name: s\nhosts: [h1]\nsteps:\n  - {wait: 1s}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := startReference(t, sc, "fixed")
	url, creds, _ := c.APIEndpoint()
	cc := cloudclient.New(cloudclient.Options{URL: url, APIKey: creds.APIKey, SecretKey: creds.SecretKey, Poll: 50 * time.Millisecond})
	net, err := cc.CreateNetwork("csc-stop-net", false)
	if err != nil {
		t.Fatal(err)
	}
	vm, job, err := cc.Deploy("csc-stop-vm", []string{net}, "h1", true)
	if err == nil {
		err = cc.Wait(job)
	}
	if err != nil {
		t.Fatal(err)
	}
	scope, err := cc.HostScope("h1")
	if err != nil {
		t.Fatal(err)
	}
	p := &cs.CustomServiceParams{}
	for k, v := range map[string]string{"zoneid": scope.Zone, "podid": scope.Pod, "clusterid": scope.Cluster, "hostid": scope.Host,
		"name": "StopCommand", "value": "result:fail", "count": "1"} {
		p.SetParam(k, v)
	}
	var out map[string]any
	if err := cc.CS.Custom.(*cs.CustomService).CustomRequest("configureSimulator", p, &out); err != nil {
		t.Fatal(err)
	}
	stop := func() error {
		job, err := cc.Stop(vm, false)
		if err == nil {
			err = cc.Wait(job)
		}
		return err
	}
	if err := stop(); err == nil || !strings.Contains(err.Error(), "Simulated failure") {
		t.Fatalf("the first stop: %v, want Simulated failure", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("the second stop (the mock used up): %v", err)
	}
	if v, err := cc.VM(vm); err != nil || v.State != "Stopped" {
		t.Fatalf("the VM: %v %v", v, err)
	}
	if m := c.DB.Mocks.Active(); len(m) != 1 || m[0].Count == nil || *m[0].Count != 0 {
		t.Fatalf("the mock: %+v", m)
	}
}

// The seeds' simulator variants through the bridge against the reference server's API face (20×
// clock), each profile on its own server: every fault goes through configureSimulator, the verdicts
// are the scenario's (its expectations for the profile, the violations exactly), and no mock or
// object is left. Seed 001 and seed 000 have no variant: docs/operators.md says why.
func TestSimulatorSeeds(t *testing.T) {
	tier.Need(t, tier.Long) // each run ~26 s of real time, mostly waiting: in parallel, and beside the bridge's
	t.Parallel()
	hostUnreachable := []string{"PingCommand result:fail", "CheckHealthCommand result:fail",
		"StartCommand wait:300000|result:fail", "StopCommand wait:300000|result:fail", "DeleteCommand wait:300000|result:fail"}
	cases := []struct {
		scenario, profile string
		want              []string // the violations, sorted
		mocks             []string // in the history's fault details
	}{
		{"seed-004-forced-destroy-simulator", "cloudstack-4.22", []string{"ip-conflict", "orphan-domain", "volume-in-use"},
			hostUnreachable},
		{"seed-004-forced-destroy-simulator", "fixed", nil, hostUnreachable},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.profile, func(t *testing.T) {
			t.Parallel()
			sc := loadScenario(t, tc.scenario)
			c := startReference(t, sc, tc.profile)
			url, creds, _ := c.APIEndpoint()
			var log strings.Builder
			start := time.Now()
			res, err := harness.Run(Def, sc, harness.RunOptions{Profile: tc.profile, Own: &Options{
				API:   cloudclient.Options{URL: url, APIKey: creds.APIKey, SecretKey: creds.SecretKey},
				Hosts: liveHosts(c), Faults: FaultsSimulator,
				Log: &log, Now: c.Now, Speed: 20, Poll: 100 * time.Millisecond,
			}})
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			checkVerdicts(t, res, tc.profile, tc.want, start)
			var details []string
			for _, e := range res.Rec.History().Slice() {
				if e.Kind == history.Fault && e.To != "" {
					details = append(details, e.Detail)
				}
			}
			for _, m := range tc.mocks {
				if !slices.ContainsFunc(details, func(s string) bool {
					return strings.Contains(s, "through configureSimulator") && strings.Contains(s, m)
				}) {
					t.Errorf("mock %q is not in the history's faults: %q", m, details)
				}
			}
			if m := c.DB.Mocks.Active(); len(m) > 0 {
				t.Errorf("mocks left after the run: %+v", m)
			}
			if len(res.Leftovers) > 0 {
				t.Errorf("left behind: %v", res.Leftovers)
			}
		})
	}
}

// The linearizability check runs where the world gives Run its bounds, as both fault sources declare.
func TestLinearizabilityAsDeclared(t *testing.T) {
	_, ok := (&extRun{}).LinearBounds()
	for _, c := range []harness.Capabilities{Capabilities, SimulatorCapabilities} {
		if c.Runs(harness.Linearizability) != ok {
			t.Errorf("%s declares linearizability %v, its LinearBounds says %v", c.World, c.Runs(harness.Linearizability), ok)
		}
	}
}
