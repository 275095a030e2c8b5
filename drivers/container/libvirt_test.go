package container

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/internal/tier"
)

// TestLibvirtAgentRestart: with libvirt-backed agents, a deployed VM's domain is a real QEMU domain
// that survives its agent container being stopped (SIGTERM) or killed (SIGKILL) and started again —
// same domain, same QEMU process, as libvirtd itself says — and the server sees it again in the
// restarted agent's report; Close then removes every container, domain and file of the run.
func TestLibvirtAgentRestart(t *testing.T) {
	tier.Need(t, tier.Containers)
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		t.Skipf("Docker unreachable: %v", err)
	}
	if err := LibvirtUsable(""); err != nil {
		t.Skipf("libvirt-backed agents cannot run here (%v): as root run ci/setup-libvirt.sh and ci/build-guest.sh", err)
	}
	run := fmt.Sprintf("t%d", time.Now().UnixMilli()%1e8)
	c, err := Start(ctx, Options{Run: run, Hosts: []string{"h1"}, Profile: "fixed", Domains: DomainsLibvirt, Verbose: true,
		// the investigation a missed ping starts (AgentManagerImpl.handleDisconnectWithInvestigation)
		// waits 50 s for a CheckHealthCommand and 20 s for a neighbour's check: shortened, as
		// the container world's Scaling (harness/world/container) does, so a partition shows Alert within the test's window
		Config: map[string]string{"ping.interval": "2", "ping.timeout": "2.5", "commands.timeout": "CheckHealthCommand=1,CheckOnHostCommand=1"}, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	if !c.Libvirt || !strings.Contains(c.DomainsWhy, "REAL libvirt domains") {
		t.Fatalf("asked for libvirt domains, got: %s", c.DomainsWhy)
	}
	waitHost(t, ctx, c, "h1", "Up", 60*time.Second)
	var nw struct{ ID int64 }
	if err := c.Control(ctx, "createNetwork", url.Values{"name": {"n1"}}, &nw); err != nil {
		t.Fatal(err)
	}
	var dep struct {
		VM    struct{ ID int64 }
		JobID int64
	}
	if err := c.Control(ctx, "deployVirtualMachine", url.Values{"networkids": {fmt.Sprint(nw.ID)}, "hostid": {"h1"}}, &dep); err != nil {
		t.Fatal(err)
	}
	var jr struct{ Succeeded bool }
	if err := c.Control(ctx, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(dep.JobID)}, "wait": {"120s"}}, &jr); err != nil || !jr.Succeeded {
		t.Fatalf("deploy: %v %+v\n%s", err, jr, c.ServerLogs(ctx))
	}
	vmName := vmRecord(t, ctx, c, dep.VM.ID).Name
	ds, err := c.Domains(ctx, "h1")
	if err != nil || len(ds) != 2 {
		t.Fatalf("h1's domains from libvirtd: %v %v", ds, err)
	}

	// libvirtd's own word, on a connection of the test's: the domain runs, and which QEMU runs it.
	lv, err := golibvirt.ConnectToURI(&url.URL{Scheme: "qemu", Path: "/system"})
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Disconnect()
	full := libvirt.NamePrefix + run + "-h1-" + vmName
	qemu := func() (int32, string) {
		t.Helper()
		d, err := lv.DomainLookupByName(full)
		if err != nil {
			t.Fatalf("libvirtd does not know %s: %v", full, err)
		}
		st, _, err := lv.DomainGetState(d, 0)
		if err != nil || golibvirt.DomainState(st) != golibvirt.DomainRunning {
			t.Fatalf("%s: state %d %v, want running", full, st, err)
		}
		b, err := os.ReadFile(filepath.Join("/run/libvirt/qemu", full+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		return st, strings.TrimSpace(string(b))
	}
	_, pid := qemu()
	t.Logf("%s runs in QEMU pid %s", full, pid)

	for _, f := range []struct {
		name string
		stop func(context.Context, string) error
	}{{"stop (SIGTERM)", c.StopAgent}, {"kill (SIGKILL)", c.KillAgent}} {
		seen := len(c.ServerLogs(ctx))
		if err := f.stop(ctx, "h1"); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if _, p := qemu(); p != pid {
			t.Fatalf("%s: QEMU pid %s, was %s", f.name, p, pid)
		}
		if err := c.StartAgent(ctx, "h1"); err != nil {
			t.Fatal(err)
		}
		waitHost(t, ctx, c, "h1", "Up", 60*time.Second)
		// The restarted agent reports the VM and its router from libvirt (it keeps no list of its own).
		want := "host: h1, number of records in report: 2"
		for deadline := time.Now().Add(60 * time.Second); !strings.Contains(c.ServerLogs(ctx)[seen:], want); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the server never processed a report of h1's 2 domains after the restart:\n%s", f.name, c.ServerLogs(ctx)[seen:])
			}
		}
		if _, p := qemu(); p != pid {
			t.Fatalf("%s: QEMU pid %s after the restart, was %s", f.name, p, pid)
		}
		if r := vmRecord(t, ctx, c, dep.VM.ID); r.State != "Running" || r.HostID != "h1" {
			t.Fatalf("%s: the server's record of %s is %s on %q", f.name, vmName, r.State, r.HostID)
		}
		t.Logf("%s of h1's agent container: %s still runs in QEMU pid %s, the server saw it in the restarted agent's report", f.name, full, pid)
	}

	closed = true
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if left, err := Cleanup(ctx, run); err != nil || len(left) > 0 {
		t.Errorf("containers after Close: %v %v", left, err)
	}
	labelled, err := libvirt.Labelled(lv)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range labelled {
		if d.Label.Run == run {
			t.Errorf("domain %s of the run left after Close", d.Domain.Name)
		}
	}
	if _, err := os.Stat(libvirt.RunDir(libvirt.DefaultBaseDir(), run)); !os.IsNotExist(err) {
		t.Errorf("run directory left after Close: %v", err)
	}
}

type vmRow struct {
	ID     int64
	Name   string
	State  string
	HostID string
}

func vmRecord(t *testing.T, ctx context.Context, c *Cluster, id int64) vmRow {
	t.Helper()
	var vs []vmRow
	if err := c.Control(ctx, "listVirtualMachines", nil, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.ID == id {
			return v
		}
	}
	t.Fatalf("no record of VM %d", id)
	return vmRow{}
}

// TestChooseDomains: where the domains run and why, without Docker; a missing guest makes auto
// fall back to simulated domains and libvirt fail.
func TestChooseDomains(t *testing.T) {
	noGuest := t.TempDir()
	for _, tc := range []struct {
		domains, guest string
		want           string // in DomainsWhy, or in the error
		fails          bool
	}{
		{DomainsSimulated, "", "SIMULATED domains (csconform hypervisor container per host; simulated domains were asked for)", false},
		{"", noGuest, "SIMULATED domains (csconform hypervisor container per host; no libvirt: ", false},
		{DomainsAuto, noGuest, "no libvirt: ", false},
		{DomainsLibvirt, noGuest, "libvirt domains asked for, but ", true},
		{"qemu", "", `Options.Domains "qemu"`, true},
	} {
		c := &Cluster{Run: "r", o: Options{Run: "r", Domains: tc.domains, GuestDir: tc.guest, BaseDir: t.TempDir()}}
		err := c.chooseDomains()
		got := c.DomainsWhy
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != tc.fails || !strings.Contains(got, tc.want) || c.Libvirt {
			t.Errorf("Domains %q, guest %q: %q (err %v, libvirt %v), want %q", tc.domains, tc.guest, got, err, c.Libvirt, tc.want)
		}
	}
}
