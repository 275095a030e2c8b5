package container

// go test ./drivers/container -containers runs these against the local Docker daemon (ci/test-containers.sh).

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

var containers = flag.Bool("containers", false, "run the tests that need a Docker daemon")

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
	if !*containers {
		t.Skip("needs Docker: go test ./drivers/container -containers")
	}
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		t.Skipf("Docker unreachable: %v", err)
	}
	run := fmt.Sprintf("t%d", time.Now().UnixMilli()%1e8)
	// Simulated domains: the fault primitives act on the agent containers either way, and
	// TestLibvirtAgentRestart covers agents on real domains.
	c, err := Start(ctx, Options{Run: run, Hosts: []string{"h1", "h2"}, Profile: "fixed", Domains: DomainsSimulated,
		Config: map[string]string{"ping.interval": "2", "ping.timeout": "2.5"}, Log: testWriter{t}})
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
	var nw struct{ ID int64 }
	if err := c.Control(ctx, "createNetwork", url.Values{"name": {"n1"}}, &nw); err != nil {
		t.Fatal(err)
	}
	var dep struct{ JobID int64 }
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
	if err := c.RestartServer(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	waitHost(t, ctx, c, "h1", "Up", 60*time.Second)
	t.Logf("after a server restart (empty in-memory database): %s", hostStates(t, ctx, c))
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

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
