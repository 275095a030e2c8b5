package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/internal/tier"
)

// noFaults is a scenario an external run can do without host access.
const noFaults = `name: no-faults
title: deploy, destroy, deploy
hosts: [h1]
networks: [{name: net1}]
steps:
  - {op: deploy, vm: web1, networks: [net1], host: h1}
  - {case: destroy, op: destroyExpunge, vm: web1}
settle: 2s
`

func TestReproExternalFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "no-faults.yaml")
	if err := os.WriteFile(file, []byte(noFaults), 0o644); err != nil {
		t.Fatal(err)
	}
	api := []string{"--api", "http://127.0.0.1:1/client/api", "--api-key", "k", "--secret-key", "s3cr3t-for-the-flags-test", "--host", "h1=http://127.0.0.1:1"}
	with := func(args ...string) []string { return append(append([]string{"repro"}, args...), api...) }
	runCLICases(t, []cliCase{
		{with("seed-004-forced-destroy", "--profile", "fixed"), 2, "--profile does not go with --api"},
		{with("seed-004-forced-destroy", "--seed", "3"), 2, "--seed does not go with --api"},
		{[]string{"repro", "seed-004-forced-destroy", "--allow-host", "h1"}, 2, "--allow-host is for a run against an external CloudStack"},
		{[]string{"repro", "seed-004-forced-destroy", "--api", "http://x/client/api", "--api-key", "k", "--secret-key", "s"}, 2, "give the hosts"},
		{with("all"), 2, "name one scenario"},
		{with("no-such-scenario"), 2, `unknown scenario "no-such-scenario"`},
		{with("seed-004-forced-destroy"), 2, "step 2 (fault agent-restart on h1) needs host access"},
		{with("seed-004-forced-destroy", "--allow-host", "kvm*", "--yes"), 2, "host h1 is not allowlisted"},
		{with("seed-001-stale-power-report", "--allow-host", "h1", "--yes"), 2, "(fault stale-report) cannot run against an external CloudStack"},
		{with("seed-000-ab"), 2, "(primed) cannot run against an external CloudStack"},
		{with(file, "--expect", "fixed"), 2, "states no outcome for fixed"},
		{with(file), 2, "connection refused"},
		{with("seed-004-forced-destroy", "--faults", "ssh"), 2, `--faults: unknown fault source "ssh" (one of inject, simulator)`},
		{with("seed-004-forced-destroy", "--faults", "simulator", "--yes"), 2, "--yes does not go with --faults simulator"},
		{with("seed-004-forced-destroy", "--faults", "simulator"), 2, "(fault agent-restart) cannot run through CloudStack's simulator (--faults simulator): the simulator's agents are direct agents"},
		{with("seed-001-stale-power-report", "--faults", "simulator"), 2, "(fault stale-report) cannot run through CloudStack's simulator"},
		{with(file, "--faults", "simulator"), 2, "connection refused"},
		{[]string{"repro", file, "--api", "http://127.0.0.1:1/client/api", "--api-key", "k", "--secret-key", "s3cr3t-for-the-flags-test", "--faults", "simulator"}, 2, "connection refused"},
	})
}

// shim is systemctl and systemd-run for csconform inject --local on a one-machine reference setup:
// "systemctl stop|start cloudstack-agent" stop and start the csconform agent of host h1; systemd-run
// (inject's dead man's switch) and its cancelling (systemctl stop csconform-heal-ID.timer) do nothing.
const shim = `#!/bin/sh
case "$1 $2" in
"stop cloudstack-agent")
	pid=$(cat "$DIR/agent.pid"); kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done ;;
"start cloudstack-agent")
	"$BIN" agent --host h1 --server "$SERVER" --hypervisor "unix:$DIR/h1.sock" </dev/null >>"$DIR/agent.log" 2>&1 &
	echo $! > "$DIR/agent.pid" ;;
"stop csconform-heal-"*) ;;
*) echo "shim: $*" >&2; exit 1 ;;
esac
`

// csconform repro seed-004 --api against csconform server --api with an agent on a csconform hypervisor,
// the agent restart applied through inject --local (systemctl shimmed): under cloudstack-4.22 the run
// reports the orphaned domain and the IP conflict, the outcome matches the profile's expectations,
// nothing the run created is left, and the secret is in no output.
func TestReproExternalAgainstServer(t *testing.T) {
	// a minute of real time, most of the package's: the realtime tier (ci/test.sh); the laptop tests run
	// seed 004 through the external world in process (harness/world/external TestExternalSeed004) and
	// this command's flag checks (TestReproExternalFlags)
	tier.Need(t, tier.Realtime)
	t.Parallel() // mostly waiting: beside the package's other real-time tests (no t.Setenv here)
	dir := t.TempDir()
	bin := buildCSConform(t)
	const key, secret = "ext-api-key", "ext-secret-9c1e77d0"
	creds := []string{envAPIKey + "=" + key, envSecretKey + "=" + secret}
	srv, out := startProcEnv(t, append([]string{control.EnvToken + "=" + testControlToken, control.EnvAgentKey + "=" + testAgentKey}, creds...), bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--api", "127.0.0.1:0",
		"--config", "ping.interval=1", "--config", "vm.job.check.interval=200", "--config", "vm.destroy.forcestop=true")
	addrs, _ := listening(out, "agents", "api")
	agentAddr, api := addrs["agents"], addrs["api"]
	if api == "" {
		t.Fatalf("no api address; stderr:\n%s", srv.stderr.String())
	}
	_, hvOut := startProc(t, bin, "hypervisor", "--host", "h1", "--socket", filepath.Join(dir, "h1.sock"), "--listen", "127.0.0.1:0")
	var truth string
	for truth == "" && hvOut.Scan() {
		if a, ok := strings.CutPrefix(hvOut.Text(), "hypervisor h1: truth on "); ok {
			truth = a
		}
	}
	shims := filepath.Join(dir, "bin")
	os.Mkdir(shims, 0o755)
	for _, n := range []string{"systemctl", "systemd-run"} {
		body := shim
		if n == "systemd-run" {
			body = "#!/bin/sh\nexit 0\n"
		}
		if err := os.WriteFile(filepath.Join(shims, n), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// the shims' environment, and the repro's below: its inject --local finds them first on PATH; the
	// shimmed systemctl's agent presents the server's key
	env := append(os.Environ(), append(creds, "DIR="+dir, "BIN="+bin, "SERVER="+agentAddr, control.EnvAgentKey+"="+testAgentKey,
		"PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	start := exec.Command(filepath.Join(shims, "systemctl"), "start", "cloudstack-agent")
	start.Env = env
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("starting the agent: %v %s", err, out)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "agent.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	c := cs.NewClient(api, key, secret, false)
	poll(t, 15*time.Second, "h1 Up", func() bool {
		h, err := c.Host.ListHosts(c.Host.NewListHostsParams())
		return err == nil && h.Count == 1 && h.Hosts[0].State == "Up"
	})

	// a wrong secret: CloudStack's 401, shown as such, exit 2
	var o, e bytes.Buffer
	if code := run([]string{"repro", "seed-004-forced-destroy", "--api", api, "--api-key", key, "--secret-key", "wrong-" + secret,
		"--host", "h1=" + truth, "--allow-host", "h1", "--local", "--yes"}, &o, &e); code != 2 || !strings.Contains(e.String(), "error 401") {
		t.Fatalf("a wrong secret: exit %d\n%s%s", code, o.String(), e.String())
	}

	// a host read under a name CloudStack does not have
	o.Reset()
	e.Reset()
	if code := run([]string{"repro", "seed-004-forced-destroy", "--api", api, "--api-key", key, "--secret-key", secret, "--host", "kvm9=" + truth, "--map-host", "h1=kvm9",
		"--allow-host", "kvm9", "--local", "--yes"}, &o, &e); code != 2 || !strings.Contains(e.String(), `no Routing host "kvm9"`) {
		t.Fatalf("an unknown host: exit %d\n%s%s", code, o.String(), e.String())
	}

	hist, injectLog := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "inject.log")
	cmd := exec.Command(bin, "repro", "seed-004-forced-destroy", "--api", api, "--host", "h1="+truth, "--poll", "250ms",
		"--allow-host", "h1", "--local", "--yes", "--audit-log", injectLog, "--expect", "cloudstack-4.22", "--history", hist)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Env = &stdout, &stderr, env
	began := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d after %s\n%s", code, time.Since(began).Round(time.Second), stdout.String())
	if code != 1 {
		t.Fatalf("exit %d, want 1 (violations found)\n%s", code, stderr.String())
	}
	for _, want := range []string{"VIOLATION orphan-domain", "VIOLATION ip-conflict", "outcome as expected for cloudstack-4.22", "every VM and network of run", "NOT LINEARIZABLE vm:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	vms, err := c.VirtualMachine.ListVirtualMachines(c.VirtualMachine.NewListVirtualMachinesParams())
	if err != nil || vms.Count != 0 {
		t.Errorf("VMs left: %v %+v", err, vms)
	}
	nets, err := c.Network.ListNetworks(c.Network.NewListNetworksParams())
	if err != nil || nets.Count != 0 {
		t.Errorf("networks left: %v %+v", err, nets)
	}
	h, _ := os.ReadFile(hist)
	il, _ := os.ReadFile(injectLog)
	if !strings.Contains(string(il), `"systemctl","stop","cloudstack-agent"`) {
		t.Errorf("the agent restart is not in inject's log:\n%s", il)
	}
	for what, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "history": string(h), "inject log": string(il),
		"wrong-key run": o.String() + e.String()} {
		for _, cred := range []string{secret, key} {
			if strings.Contains(s, cred) {
				t.Errorf("a credential appears in the %s", what)
			}
		}
	}
}
