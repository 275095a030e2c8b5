package scalebench

import (
	"fmt"
	"time"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
)

// Options size a generated scale scenario: a cloud of Hosts hosts with VMsPerHost user VMs each,
// spread over networks of at most VMsPerNetwork VMs, deployed host by host and then left to run (power
// sync, pings, job and network GC) until Duration of simulated time has passed.
type Options struct {
	Hosts         int
	VMsPerHost    int           // 0: 20
	VMsPerNetwork int           // 0: 25 (a network's guest pool holds 32 addresses, one for its router)
	Duration      time.Duration // 0: 24 h
}

// The bounds of a generated cloud: a network pool of 32 addresses, one for the router.
const (
	maxScaleHosts      = harness.MaxScenarioHosts
	maxScaleVMsPerHost = 1_000
	maxVMsPerNetwork   = 31
	scaleBatchWait     = 10 * time.Second // between two hosts' deploys
)

func (o Options) withDefaults() Options {
	if o.VMsPerHost == 0 {
		o.VMsPerHost = 20
	}
	if o.VMsPerNetwork == 0 {
		o.VMsPerNetwork = 25
	}
	if o.Duration == 0 {
		o.Duration = 24 * time.Hour
	}
	return o
}

// Scenario generates the scenario o describes. The deploys of one host run at once, the hosts one
// after the other 10 s apart; the settle after the last one fills the rest of Duration.
func Scenario(o Options) (*harness.Scenario, error) {
	o = o.withDefaults()
	switch {
	case o.Hosts < 1 || o.Hosts > maxScaleHosts:
		return nil, fmt.Errorf("scale: hosts must be 1 to %d, got %d", maxScaleHosts, o.Hosts)
	case o.VMsPerHost < 1 || o.VMsPerHost > maxScaleVMsPerHost:
		return nil, fmt.Errorf("scale: VMs per host must be 1 to %d, got %d", maxScaleVMsPerHost, o.VMsPerHost)
	case o.VMsPerNetwork < 1 || o.VMsPerNetwork > maxVMsPerNetwork:
		return nil, fmt.Errorf("scale: VMs per network must be 1 to %d (a pool of 32 addresses), got %d", maxVMsPerNetwork, o.VMsPerNetwork)
	case o.Hosts*o.VMsPerHost > harness.MaxScenarioVMs:
		return nil, fmt.Errorf("scale: %d hosts x %d VMs is %d VMs: at most %d", o.Hosts, o.VMsPerHost, o.Hosts*o.VMsPerHost, harness.MaxScenarioVMs)
	case o.Duration < 0 || o.Duration > harness.DefaultMaxSimTime:
		return nil, fmt.Errorf("scale: duration must be at most %s, got %s", harness.DefaultMaxSimTime, o.Duration)
	}
	vms := o.Hosts * o.VMsPerHost
	nets := (vms + o.VMsPerNetwork - 1) / o.VMsPerNetwork
	sc := &harness.Scenario{
		Name:  fmt.Sprintf("scale-%dx%d", o.Hosts, o.VMsPerHost),
		Title: fmt.Sprintf("%d hosts x %d VMs over %d networks, deployed host by host, then %s of simulated time (scale)", o.Hosts, o.VMsPerHost, nets, o.Duration),
		Seed:  1,
	}
	for h := 1; h <= o.Hosts; h++ {
		sc.Hosts = append(sc.Hosts, fmt.Sprintf("h%d", h))
	}
	for n := 1; n <= nets; n++ {
		sc.Networks = append(sc.Networks, harness.NetworkDef{Name: fmt.Sprintf("net%d", n)})
	}
	// VM i goes to network i mod nets: each network's VMs spread over many hosts, as tenants' are.
	for i := 0; i < vms; i++ {
		st := harness.Step{Op: "deploy", VM: fmt.Sprintf("v%d", i+1), Networks: []string{fmt.Sprintf("net%d", i%nets+1)},
			Host: sc.Hosts[i/o.VMsPerHost], Async: true}
		if i > 0 && i%o.VMsPerHost == 0 {
			st.Wait = scaleBatchWait
		}
		sc.Steps = append(sc.Steps, st)
	}
	sc.Settle = max(o.Duration-time.Duration(o.Hosts)*scaleBatchWait, 3*time.Minute)
	sc.Expect = map[string]harness.Expect{impl.Fixed: {Violations: []string{}}}
	return sc, sc.Validate()
}
