package container

// CSCONFORM_TIERS=containers go test ./drivers/container runs these against the local Docker daemon
// (ci/test-containers.sh).

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/internal/tier"
)

type hostRow struct {
	ID     string
	Status string
}

func hostStates(t *testing.T, ctx context.Context, c *Cluster) string {
	var hs []hostRow
	if err := c.Control(ctx, "listHosts", nil, &hs); err != nil {
		return "unreachable (" + err.Error() + ")"
	}
	var out []string
	for _, h := range hs {
		out = append(out, h.ID+"="+h.Status)
	}
	return strings.Join(out, " ")
}

func waitHost(t *testing.T, ctx context.Context, c *Cluster, h, want string, limit time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	for time.Since(t0) < limit {
		var hs []hostRow
		if c.Control(ctx, "listHosts", nil, &hs) == nil {
			for _, r := range hs {
				if r.ID == h && r.Status == want {
					return time.Since(t0)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("host %s not %s within %s: %s", h, want, limit, hostStates(t, ctx, c))
	return 0
}

// TestFaults starts two hosts, deploys a VM on h1 and puts every fault primitive to work, checking
// what the server sees and that the domain outlives its agent; then everything of the run is gone.
func TestFaults(t *testing.T) {
	tier.Need(t, tier.Containers)
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		t.Skipf("Docker unreachable: %v", err)
	}
	run := fmt.Sprintf("t%d", time.Now().UnixMilli()%1e8)
	// Simulated domains: the fault primitives act on the agent containers either way, and
	// TestLibvirtAgentRestart covers agents on real domains.
	c, err := Start(ctx, Options{Run: run, Hosts: []string{"h1", "h2"}, Profile: "fixed", Domains: DomainsSimulated,
		// the investigation a missed ping starts (AgentManagerImpl.handleDisconnectWithInvestigation)
		// waits 50 s for a CheckHealthCommand and 20 s for a neighbour's check: shortened, as
		// the container world's Scaling (harness/world/container) does, so a partition shows Alert within the test's window
		Config: map[string]string{"ping.interval": "2", "ping.timeout": "2.5", "commands.timeout": "CheckHealthCommand=1,CheckOnHostCommand=1"}, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		left, err := Cleanup(ctx, run)
		if err != nil || len(left) > 0 {
			t.Errorf("after Close: %v %v", left, err)
		}
	}()
	waitHost(t, ctx, c, "h1", "Up", 30*time.Second)
	waitHost(t, ctx, c, "h2", "Up", 30*time.Second)
	// the control endpoint answers only with the run's token, and every port is published on the
	// host's loopback only
	if err := control.Do(ctx, c.control+"/listHosts", "GET", "", nil); err == nil || !strings.Contains(err.Error(), "no control token") {
		t.Fatalf("control endpoint without the token: %v", err)
	}
	if err := control.Do(ctx, c.control+"/listHosts", "GET", "not-the-run-token-at-all", nil); err == nil || !strings.Contains(err.Error(), "wrong control token") {
		t.Fatalf("control endpoint with a wrong token: %v", err)
	}
	// so do the hosts' fault hooks (issue 35 item 5); the truth, read-only, needs none
	faults, err := endpoint(ctx, c.hosts["h1"].Agent, faultsPort)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{c.hosts["h1"].truth + "/crash?name=i-0-0-VM", c.hosts["h1"].truth + "/routerBoot?d=1s", faults + "/delayNextOutOfBand?d=1s"} {
		if err := control.Do(ctx, u, "POST", "", nil); err == nil || !strings.Contains(err.Error(), "no control token") {
			t.Fatalf("%s without the token: %v", u, err)
		}
	}
	if err := control.Do(ctx, c.hosts["h1"].truth+"/domains", "GET", "", nil); err != nil {
		t.Fatalf("the truth without a token: %v", err)
	}
	for _, ct := range []testcontainers.Container{c.ms, c.hosts["h1"].HV, c.hosts["h1"].Agent} {
		insp, err := ct.Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for p, bs := range insp.NetworkSettings.Ports {
			for _, b := range bs {
				if b.HostIP.String() != "127.0.0.1" {
					t.Fatalf("%s: %s published on %s", insp.Name, p, b.HostIP)
				}
			}
		}
	}
	if strings.Contains(c.ServerLogs(ctx), c.token) {
		t.Fatal("the control token is in the server's output")
	}
	var nw struct{ ID int64 }
	if err := c.Control(ctx, "createNetwork", url.Values{"name": {"n1"}}, &nw); err != nil {
		t.Fatal(err)
	}
	var dep struct {
		JobID int64
		VM    struct{ ID int64 }
	}
	if err := c.Control(ctx, "deployVirtualMachine", url.Values{"networkids": {fmt.Sprint(nw.ID)}, "hostid": {"h1"}}, &dep); err != nil {
		t.Fatal(err)
	}
	var jr struct{ Succeeded bool }
	if err := c.Control(ctx, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(dep.JobID)}, "wait": {"60s"}}, &jr); err != nil || !jr.Succeeded {
		t.Fatalf("deploy: %v %+v", err, jr)
	}
	ds, err := c.Domains(ctx, "h1")
	if err != nil || len(ds) != 2 {
		t.Fatalf("h1 domains: %v %v", ds, err)
	}
	t.Logf("h1 runs %v", ds)

	for _, f := range []struct {
		name         string
		apply, heal  func(context.Context) error
		seen, healed string
	}{
		{"partition", func(ctx context.Context) error { return c.Disconnect(ctx, "h1") }, func(ctx context.Context) error { return c.Connect(ctx, "h1") }, "Alert", "Up"},
		{"pause", func(ctx context.Context) error { return c.Pause(ctx, "h1") }, func(ctx context.Context) error { return c.Unpause(ctx, "h1") }, "Alert", "Up"},
		{"stop/start", func(ctx context.Context) error { return c.StopAgent(ctx, "h1") }, func(ctx context.Context) error { return c.StartAgent(ctx, "h1") }, "Disconnected", "Up"},
		{"kill", func(ctx context.Context) error { return c.KillAgent(ctx, "h1") }, func(ctx context.Context) error { return c.StartAgent(ctx, "h1") }, "", "Up"},
	} {
		t0 := time.Now()
		if err := f.apply(ctx); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		var states []string
		last := ""
		for time.Since(t0) < 12*time.Second {
			if s := hostStates(t, ctx, c); s != last {
				states = append(states, fmt.Sprintf("%.1fs %s", time.Since(t0).Seconds(), s))
				last = s
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err := f.heal(ctx); err != nil {
			t.Fatalf("heal %s: %v", f.name, err)
		}
		d := waitHost(t, ctx, c, "h1", f.healed, 60*time.Second)
		t.Logf("%s: server saw %s; Up again %.1fs after the heal", f.name, strings.Join(states, " | "), d.Seconds())
		if f.seen != "" && !strings.Contains(strings.Join(states, " "), "h1="+f.seen) {
			t.Errorf("%s: the server never saw h1 %s", f.name, f.seen)
		}
		if ds2, err := c.Domains(ctx, "h1"); err != nil || len(ds2) != 2 {
			t.Errorf("%s: h1's domains after the fault: %v %v", f.name, ds2, err)
		}
	}
	var trans []string
	if err := c.RollingRestart(ctx, 3*time.Second, 2*time.Second, func(h, what string) {
		trans = append(trans, fmt.Sprintf("%s %s: %s", h, what, hostStates(t, ctx, c)))
	}); err != nil {
		t.Fatal(err)
	}
	waitHost(t, ctx, c, "h1", "Up", 60*time.Second)
	waitHost(t, ctx, c, "h2", "Up", 60*time.Second)
	t.Logf("rolling restart: %s", strings.Join(trans, " | "))
	// ms-restart: the server's process is killed and its container started again; its database (the
	// state file in the container) keeps the VM, which is still Running on h1, and a stop works. The
	// network, backdated by two days before, is still as old.
	var aged struct{ Created time.Time }
	if err := c.Control(ctx, "backdateNetwork", url.Values{"id": {fmt.Sprint(nw.ID)}, "by": {"48h"}}, &aged); err != nil {
		t.Fatal(err)
	}
	if age := time.Since(aged.Created); age < 47*time.Hour {
		t.Fatalf("backdateNetwork by 48h: the network is %s old", age)
	}
	if err := c.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Control(ctx, "listHosts", nil, nil); err == nil {
		t.Fatal("the control endpoint still answers after the server's kill")
	}
	time.Sleep(2 * time.Second)
	if err := c.StartServer(ctx); err != nil {
		t.Fatal(err)
	}
	var vms []struct {
		ID    int64
		Name  string
		State string
	}
	if err := c.Control(ctx, "listVirtualMachines", nil, &vms); err != nil {
		t.Fatal(err)
	}
	t.Logf("after the server's restart: it lists %+v; hosts %s", vms, hostStates(t, ctx, c))
	if len(vms) != 2 {
		t.Fatalf("after the server's restart it lists %+v, want the VM and its router", vms)
	}
	for _, v := range vms {
		if v.State != "Running" {
			t.Errorf("after the server's restart VM %s is %s, want Running", v.Name, v.State)
		}
	}
	var nets []struct{ Created time.Time }
	if err := c.Control(ctx, "listNetworks", nil, &nets); err != nil || len(nets) != 1 || !nets[0].Created.Equal(aged.Created) {
		t.Errorf("after the server's restart the networks are %+v (%v), want the one created at %s", nets, err, aged.Created)
	}
	waitHost(t, ctx, c, "h1", "Up", 60*time.Second)
	var stop struct{ JobID int64 }
	if err := c.Control(ctx, "stopVirtualMachine", url.Values{"id": {fmt.Sprint(dep.VM.ID)}}, &stop); err != nil {
		t.Fatal(err)
	}
	if err := c.Control(ctx, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(stop.JobID)}, "wait": {"60s"}}, &jr); err != nil || !jr.Succeeded {
		t.Fatalf("stop after the server's restart: %v %+v", err, jr)
	}
	if ds, err := c.Domains(ctx, "h1"); err != nil || len(ds) != 1 {
		t.Errorf("h1 after the stop runs %v (%v), want the router only", ds, err)
	}
	// guest-shutdown and slow-router-boot act on the hypervisors
	if err := c.SetRouterBoot(ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRouterBoot(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.GuestShutdown(ctx, "h1", "i-2-99-VM"); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("guest shutdown of a domain that does not run: %v", err)
	}
	// a server left stopped is started again by Close, like every other fault
	if err := c.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	// A fault left in force is healed by Close.
	if err := c.Pause(ctx, "h2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Disconnect(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
