package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/history"
)

func TestServeFlagErrors(t *testing.T) {
	// a port nobody listens on
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	// a port that accepts, for the checks made after the agent reached its server
	ll, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	reachable := ll.Addr().String()
	t.Setenv("CSCONFORM_RUN", "")
	t.Setenv(control.EnvAgentKey, "")
	runCLICases(t, []cliCase{{[]string{"agent", "--host", "h1", "--server", dead}, 2, "no agent key"}})
	t.Setenv(control.EnvAgentKey, testAgentKey) // the checks after the key's
	cases := []cliCase{
		{[]string{"server", "-h"}, 0, "--listen ADDR"},
		{[]string{"agent", "--help"}, 0, "--hypervisor NAME"},
		{[]string{"server", "--bogus"}, 2, "bogus"},
		{[]string{"server", "extra"}, 2, "unexpected argument"},
		{[]string{"server", "--config", "nope=1"}, 2, "unknown configuration key"},
		{[]string{"server", "--config", "ping.interval"}, 2, "KEY=VALUE"},
		{[]string{"server", "--config", "ping.interval=fast"}, 2, "not a number"},
		{[]string{"server", "--profile", "cloudstack-9"}, 2, "unknown profile"},
		{[]string{"server", "--defects", "D9"}, 2, "unknown defect"},
		{[]string{"server", "--listen", "127.0.0.1:99999"}, 2, "agent listener"},
		{[]string{"agent", "--server", dead}, 2, "--host is required"},
		{[]string{"agent", "--host", "h1"}, 2, "--server is required"},
		{[]string{"agent", "--host", "h1", "--server", dead}, 2, "cannot reach the management server"},
		{[]string{"agent", "--host", "h1", "--server", dead, "--hypervisor", "xen"}, 2, "unknown hypervisor"},
		{[]string{"agent", "--host", "h1", "--server", dead, "--profile", "fixd"}, 2, "unknown profile \"fixd\""},
		{[]string{"agent", "--host", "h1", "--server", dead, "--defects", "X9"}, 2, "X9"},
		{[]string{"agent", "--host", "h1", "--server", dead, "--hypervisor", "libvirt"}, 2, "needs --run"},
		{[]string{"agent", "--host", "h1", "--server", dead, "--hypervisor", "libvirt:qemu:///system", "--run", "r1", "--virt-type", "xen"}, 2, "want kvm or qemu"},
		{[]string{"agent", "--host", "h1", "--server", dead, "--hypervisor", "libvirt", "--run", "r1", "--router-boot", "-1s"}, 2, "negative"},
		{[]string{"agent", "--host", "h1", "--server", reachable, "--hypervisor", "libvirt", "--run", "r1", "--guest-dir", t.TempDir()}, 2, "guest not built"},
		{[]string{"agent", "--host", "h1", "--server", reachable, "--hypervisor", "sim:extra"}, 2, "sim takes no argument"},
	}
	runCLICases(t, cases)
}

// proc is a csconform process under test.
type proc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	exited chan error
}

// testControlToken is the control token of every server the tests start (startProc), and what call
// sends.
const testControlToken = "test-control-token-5b9e1d"

// testAgentKey is the agent key of every server and agent the tests start (startProc).
const testAgentKey = "test-agent-key-7c41a0e2"

// startProc starts a csconform process with $CSCONFORM_CONTROL_TOKEN set to testControlToken and
// $CSCONFORM_AGENT_KEY to testAgentKey.
func startProc(t *testing.T, bin string, args ...string) (*proc, *bufio.Scanner) {
	t.Helper()
	return startProcEnv(t, []string{control.EnvToken + "=" + testControlToken, control.EnvAgentKey + "=" + testAgentKey}, bin, args...)
}

// startProcEnv starts a csconform process with env added to the test's environment.
func startProcEnv(t *testing.T, env []string, bin string, args ...string) (*proc, *bufio.Scanner) {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s stderr:\n%s", strings.Join(args[:min(3, len(args))], " "), p.stderr.String())
		}
	})
	return p, bufio.NewScanner(out)
}

// waitExit waits (bounded) for the process to exit and returns its status.
func (p *proc) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second): // generous: a loaded machine
		t.Fatalf("%v did not exit", p.cmd.Args)
		return -1
	}
}

// goTool is the go command: on PATH, else in GOROOT ("" when neither has it).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// built is the csconform binary the package's tests share: linking it takes seconds of both cores,
// once a test was too many. TestMain starts the build when the long tests will run, so it overlaps
// the package's quick tests instead of holding up the first real-time one, and removes it at the end.
var built struct {
	once     sync.Once
	ctx      context.Context
	dir, bin string
	out      []byte
	err      error
}

// errNoGoTool is build's error where there is no go command to build with.
var errNoGoTool = errors.New("no go tool")

// build builds the binary, once, with goTool.
func build() {
	built.once.Do(func() {
		goBin := goTool()
		if goBin == "" {
			built.err = errNoGoTool
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "csconform-test-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "csconform")
		built.out, built.err = exec.CommandContext(built.ctx, goBin, "build", "-o", built.bin, ".").CombinedOutput()
	})
}

// buildCSConform returns the package's csconform binary, built on first use.
func buildCSConform(t *testing.T) string {
	t.Helper()
	build()
	if built.err == errNoGoTool {
		t.Skip("no go tool to build csconform with")
	}
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	built.ctx = ctx
	done := make(chan struct{})
	if tier.Enabled(tier.Long) {
		go func() { build(); close(done) }()
	} else {
		close(done)
	}
	code := m.Run()
	cancel() // a run of quick tests only does not wait for a build it never used
	<-done
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// listening reads a server's output until it has said where each of what ("agents", "control",
// "api") listens, and returns those addresses and the lines it read; an address it never said is "".
func listening(out *bufio.Scanner, what ...string) (map[string]string, []string) {
	addrs := map[string]string{}
	var lines []string
	for len(addrs) < len(what) && out.Scan() {
		lines = append(lines, out.Text())
		for _, w := range what {
			if a, ok := strings.CutPrefix(out.Text(), w+" listening on "); ok {
				addrs[w] = a
			}
		}
	}
	return addrs, lines
}

// deployThroughControl creates a network and deploys a VM into it on hostID through the control
// endpoint at base, waits for the deploy's job to succeed and returns the VM's id.
func deployThroughControl(t *testing.T, base, hostID string) int64 {
	t.Helper()
	var n struct{ ID int64 }
	call(t, base, "createNetwork", url.Values{"name": {"guest"}}, &n)
	var dep struct {
		JobID int64 `json:"jobid"`
		VM    struct{ ID int64 }
	}
	call(t, base, "deployVirtualMachine", url.Values{"networkids": {fmt.Sprint(n.ID)}, "hostid": {hostID}}, &dep)
	var res struct {
		Done, Succeeded bool
		Job             struct{ Result string }
	}
	call(t, base, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(dep.JobID)}, "wait": {"60s"}}, &res)
	if !res.Succeeded {
		t.Fatalf("deploy: done=%v result %q", res.Done, res.Job.Result)
	}
	return dep.VM.ID
}

// freeAddr is a loopback address nothing listens on now, for a process that must listen on the same
// address again after a restart.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// poll retries cond every 100 ms for up to four times limit: a bounded wait, never a claim about speed
// (limit is what an idle machine needs; a loaded one, CI beside other work, takes longer, and a wait
// that ends when its event comes costs nothing for being generous).
func poll(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	limit *= 4
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// controlGet sends a control command with token ("" sends no Authorization header).
func controlGet(base, cmd string, params url.Values, token string) (*http.Response, error) {
	req, err := http.NewRequest("GET", base+"/"+cmd+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return http.DefaultClient.Do(req)
}

func call(t *testing.T, base, cmd string, params url.Values, out any) {
	t.Helper()
	resp, err := controlGet(base, cmd, params, testControlToken)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s: %s", cmd, resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, b)
	}
}

// The real binaries as processes on loopback TCP, ping.interval 1 s: a management server and two
// agents; a VM deployed on h1. Then what the server sees of each way an agent can go:
//   - kill -9 of h1's agent: the kernel closes its socket, the server reads the close
//     (AgentDisconnected) and, investigation saying Disconnected, marks h1 Alert;
//   - SIGSTOP of h2's agent: its socket stays open and its kernel still ACKs, only the missed pings
//     tell (PingTimeout) → Alert; on SIGCONT the agent finds the link the server closed, reconnects,
//     and h2 is Up again;
//   - SIGTERM of h2's agent: a graceful ShutdownCommand (ShutdownRequested) → Disconnected.
//
// Finally SIGTERM stops the server with status 0.
func TestServerAndAgentProcesses(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it in real time: about 15 s
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	dir := t.TempDir()
	bin := buildCSConform(t)
	hist := filepath.Join(dir, "history.jsonl")
	srv, srvOut := startProc(t, bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0",
		"--config", "ping.interval=1", "--config", "vm.job.check.interval=200", "--config", "commands.timeout=CheckHealthCommand=1,CheckOnHostCommand=1", "--history", hist)
	addrs, _ := listening(srvOut, "agents", "control")
	agentAddr, base := addrs["agents"], addrs["control"]
	if agentAddr == "" || base == "" {
		t.Fatalf("the server did not say where it listens; stderr:\n%s", srv.stderr.String())
	}
	agents := map[string]*proc{}
	for _, h := range []string{"h1", "h2"} {
		agents[h], _ = startProc(t, bin, "agent", "--host", h, "--server", agentAddr)
	}
	status := func(h string) string {
		var hosts []struct{ ID, Status string }
		call(t, base, "listHosts", nil, &hosts)
		for _, x := range hosts {
			if x.ID == h {
				return x.Status
			}
		}
		return ""
	}
	// why reads the server's history: the event that last moved host h to status to.
	why := func(h, to string) string {
		b, err := os.ReadFile(hist)
		if err != nil {
			t.Fatal(err)
		}
		ev := ""
		for _, line := range bytes.Split(b, []byte("\n")) {
			var e history.Event
			if json.Unmarshal(line, &e) == nil && e.Kind == history.State && e.Object == "host:"+h && e.To == to {
				ev = e.Detail
			}
		}
		return ev
	}
	poll(t, 15*time.Second, "both hosts Up", func() bool { return status("h1") == "Up" && status("h2") == "Up" })

	deployThroughControl(t, base, "h1")

	agents["h1"].cmd.Process.Kill()
	poll(t, 15*time.Second, "h1 Alert after its agent was killed", func() bool { return status("h1") == "Alert" })
	if ev := why("h1", "Alert"); ev != "AgentDisconnected" {
		t.Fatalf("h1 went Alert on %q, want AgentDisconnected (the killed agent's socket closed)", ev)
	}

	agents["h2"].cmd.Process.Signal(syscall.SIGSTOP)
	poll(t, 15*time.Second, "h2 Alert after its agent was paused", func() bool { return status("h2") == "Alert" })
	// A paused agent is noticed only by missed pings: the investigation starts from PingTimeout; found
	// Disconnected-but-up from Up, handleDisconnectWithInvestigation moves it with AgentDisconnected.
	if b, err := os.ReadFile(hist); err != nil || !bytes.Contains(b, []byte("Investigating why host h2 has disconnected with event PingTimeout")) {
		t.Fatalf("h2's investigation did not start from PingTimeout (%v)", err)
	}
	if ev := why("h2", "Alert"); ev != "AgentDisconnected" {
		t.Fatalf("h2 went Alert on %q, want AgentDisconnected (investigated: disconnected, host still up)", ev)
	}
	agents["h2"].cmd.Process.Signal(syscall.SIGCONT)
	poll(t, 20*time.Second, "h2 Up again after its agent resumed", func() bool { return status("h2") == "Up" })

	agents["h2"].cmd.Process.Signal(syscall.SIGTERM)
	if code := agents["h2"].waitExit(t); code != 0 {
		t.Fatalf("agent h2 exited %d on SIGTERM", code)
	}
	poll(t, 10*time.Second, "h2 Disconnected after a graceful agent stop", func() bool { return status("h2") == "Disconnected" })
	if ev := why("h2", "Disconnected"); ev != "ShutdownRequested" {
		t.Fatalf("h2 went Disconnected on %q, want ShutdownRequested", ev)
	}

	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := srv.waitExit(t); code != 0 {
		t.Fatalf("server exited %d on SIGTERM", code)
	}
}

// The server with --state, killed (kill -9) and started again on the same file and address: the VM
// deployed before is still listed Running, its agent comes back to the new incarnation, and a stop
// after the restart works. A bad --state is refused with status 2.
func TestServerStateFileSurvivesKill(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it in real time: about 10 s
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	dir := t.TempDir()
	bin := buildCSConform(t)
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o600)
	runCLICases(t, []cliCase{{[]string{"server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--state", filepath.Join(notDir, "db.json")}, 2, "database"}})

	state := filepath.Join(dir, "ms", "db.json")
	agentAddr, controlAddr := freeAddr(t), freeAddr(t)
	start := func() *proc {
		p, out := startProc(t, bin, "server", "--listen", agentAddr, "--control", controlAddr, "--state", state,
			"--config", "ping.interval=1", "--config", "vm.job.check.interval=200", "--config", "commands.timeout=CheckHealthCommand=1,CheckOnHostCommand=1")
		for out.Scan() {
			if strings.HasPrefix(out.Text(), "control listening on ") {
				return p
			}
		}
		t.Fatalf("the server did not start; stderr:\n%s", p.stderr.String())
		return nil
	}
	base := "http://" + controlAddr
	srv := start()
	startProc(t, bin, "agent", "--host", "h1", "--server", agentAddr)
	hostUp := func() bool {
		var hosts []struct{ ID, Status string }
		call(t, base, "listHosts", nil, &hosts)
		return len(hosts) == 1 && hosts[0].Status == "Up"
	}
	poll(t, 15*time.Second, "h1 Up", hostUp)
	vmID := deployThroughControl(t, base, "h1")

	srv.cmd.Process.Kill()
	srv.waitExit(t)
	start()
	var vms []struct {
		ID    int64
		State string
	}
	call(t, base, "listVirtualMachines", nil, &vms)
	if len(vms) != 2 { // the VM and its network's router
		t.Fatalf("after the restart the server lists %+v, want the VM and its router", vms)
	}
	for _, v := range vms {
		if v.State != "Running" {
			t.Fatalf("after the restart VM %d is %s, want Running", v.ID, v.State)
		}
	}
	poll(t, 20*time.Second, "h1 Up with the new incarnation", hostUp)
	var stop struct {
		JobID int64 `json:"jobid"`
	}
	call(t, base, "stopVirtualMachine", url.Values{"id": {fmt.Sprint(vmID)}}, &stop)
	var res struct {
		Done, Succeeded bool
		Job             struct{ Result string }
	}
	call(t, base, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(stop.JobID)}, "wait": {"60s"}}, &res)
	if !res.Succeeded {
		t.Fatalf("stop after the restart: done=%v result %q", res.Done, res.Job.Result)
	}
}

// Every file the server reads is capped, and an over-long one is refused with exit 2 and its name:
// --state /dev/zero and --control-token-file /dev/zero used to read until memory ran out, and a keys
// file with a long line said only "bufio.Scanner: token too long".
func TestServerCapsTheFilesItReads(t *testing.T) {
	t.Setenv(control.EnvToken, "")
	t.Setenv(envAPIKey, "")
	t.Setenv(envSecretKey, "")
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.token")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 20)
	f.Close()
	long := filepath.Join(dir, "long.keys")
	if err := os.WriteFile(long, []byte(envAPIKey+"="+strings.Repeat("k", 100_000)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	longToken := filepath.Join(dir, "long.token")
	if err := os.WriteFile(longToken, []byte(strings.Repeat("t", 100_000)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := []string{"server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0"}
	with := func(extra ...string) []string { return append(append([]string{}, srv...), extra...) }
	cases := []cliCase{
		{with("--control-token-file", sparse), 2, "control token file " + sparse + ": longer than the cap of 4 KiB"},
		{with("--control-token-file", longToken), 2, "control token file " + longToken + ": longer than the cap of 4 KiB"},
		{with("--api", "127.0.0.1:0", "--api-keys-file", long), 2, "api keys file " + long + ": longer than the cap of 4 KiB"},
		{with("--api", "127.0.0.1:0", "--api-keys-file", sparse), 2, "api keys file " + sparse + ": longer than the cap of 4 KiB"},
		{[]string{"audit", "--api", "http://127.0.0.1:1/client/api", "--api-keys-file", long, "--host", "h1=x"}, 2, "api keys file " + long + ": longer than the cap of 4 KiB"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases,
			cliCase{with("--state", "/dev/zero"), 2, "database /dev/zero: longer than the cap of 256 MiB"},
			cliCase{with("--control-token-file", "/dev/zero"), 2, "control token file /dev/zero: longer than the cap of 4 KiB"},
			cliCase{with("--api", "127.0.0.1:0", "--api-keys-file", "/dev/zero"), 2, "api keys file /dev/zero: longer than the cap of 4 KiB"})
	}
	runCLICases(t, cases)
}

// A server removes the files it generated in the temporary directory (the control token, the API
// keys, the agent key) when it stops, on SIGTERM as on SIGINT: every start used to leave a
// csconform-control-*.token and a csconform-api-*.keys behind. Its --history file is created 0600, as the state and key files.
func TestServerRemovesWhatItGenerated(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it: a few seconds
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	bin := buildCSConform(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			hist := filepath.Join(tmp, "history.jsonl")
			env := []string{"TMPDIR=" + tmp, control.EnvToken + "=", control.EnvAgentKey + "=", envAPIKey + "=", envSecretKey + "="}
			p, out := startProcEnv(t, env, bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--api", "127.0.0.1:0", "--history", hist)
			_, lines := listening(out, "control", "api")
			var made []string
			for _, l := range lines {
				for _, pre := range []string{"control token in ", "agent key in ", "api keys in "} {
					if f, ok := strings.CutPrefix(l, pre); ok {
						made = append(made, f)
					}
				}
			}
			if len(made) != 3 {
				t.Fatalf("want the generated token and key files named; stdout:\n%s", strings.Join(lines, "\n"))
			}
			for _, f := range made {
				if _, err := os.Stat(f); err != nil {
					t.Fatalf("while running: %v", err)
				}
			}
			st, err := os.Stat(hist)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("--history file: %v %v, want mode 0600", st, err)
			}
			p.cmd.Process.Signal(sig)
			if code := p.waitExit(t); code != 0 {
				t.Fatalf("exit %d after %s", code, sig)
			}
			for _, f := range made {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s is left after %s (%v)", f, sig, err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "csconform-*")); len(left) > 0 {
				t.Errorf("left in the temporary directory: %v", left)
			}
		})
	}
}

// The API secret: at least 16 characters wherever it comes from, and on the command line (visible to
// every local user in /proc) only with a warning.
func TestAPISecretRules(t *testing.T) {
	t.Setenv(envAPIKey, "")
	t.Setenv(envSecretKey, "")
	srv := []string{"server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--api", "127.0.0.1:99999"}
	runCLICases(t, []cliCase{
		{append(srv, "--api-key", "k", "--secret-key", "short"), 2, "--secret-key: the API secret key needs at least 16 characters"},
		{append(srv, "--api-key", "k", "--secret-key", "long-enough-secret-123"), 2, "warning: --secret-key on the command line is visible"},
	})
	t.Setenv(envAPIKey, "k")
	t.Setenv(envSecretKey, "short")
	runCLICases(t, []cliCase{{srv, 2, "$" + envSecretKey + ": the API secret key needs at least 16 characters"}})
	t.Setenv(envAPIKey, "")
	t.Setenv(envSecretKey, "")
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte(envAPIKey+"=k\n"+envSecretKey+"=short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLICases(t, []cliCase{{append(srv, "--api-keys-file", keys), 2, "api keys file " + keys + ": the API secret key needs at least 16 characters"}})
}
