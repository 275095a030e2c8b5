package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
)

// try is call for a client goroutine: the error instead of t.Fatal, the request bounded by timeout.
func try(timeout time.Duration, base, cmd string, params url.Values, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return control.Call(ctx, base, testControlToken, cmd, params, out)
}

// acked is what the server acknowledged to the clients before the kill.
type acked struct {
	mu       sync.Mutex
	vms      map[int64]string // deploy answered: the VM exists; "Running" once its job succeeded, "Destroyed" once its destroy's did
	jobs     map[int64]string // a job seen done, with the status it was seen with
	deploys  int
	destroys int
}

func (a *acked) vm(id int64, what string) { a.mu.Lock(); a.vms[id] = what; a.mu.Unlock() }

func (a *acked) job(id int64, status string) { a.mu.Lock(); a.jobs[id] = status; a.mu.Unlock() }

// loadClient deploys a VM into network n and destroys it (expunged), again and again until stop, and
// records in a what the server acknowledged. Errors only end a round: the kill ends every client.
func loadClient(base string, n int64, stop <-chan struct{}, a *acked) {
	const c = 2 * time.Minute
	wait := func(jobID int64) (bool, error) {
		var res struct {
			Done, Succeeded bool
			Job             struct{ Status string }
		}
		if err := try(c, base, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(jobID)}, "wait": {"60s"}}, &res); err != nil {
			return false, err
		}
		if !res.Done {
			return false, fmt.Errorf("job %d not done", jobID)
		}
		a.job(jobID, res.Job.Status)
		return res.Succeeded, nil
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		var dep struct {
			JobID int64 `json:"jobid"`
			VM    struct{ ID int64 }
		}
		if try(c, base, "deployVirtualMachine", url.Values{"networkids": {fmt.Sprint(n)}}, &dep) != nil {
			return
		}
		a.vm(dep.VM.ID, "")
		a.mu.Lock()
		a.deploys++
		a.mu.Unlock()
		ok, err := wait(dep.JobID)
		if err != nil {
			return
		}
		if ok {
			a.vm(dep.VM.ID, "Running")
		}
		var d struct {
			JobID int64 `json:"jobid"`
		}
		if try(c, base, "destroyVirtualMachine", url.Values{"id": {fmt.Sprint(dep.VM.ID)}, "expunge": {"true"}}, &d) != nil {
			return
		}
		a.vm(dep.VM.ID, "destroy submitted")
		if ok, err := wait(d.JobID); err != nil {
			return
		} else if ok {
			a.vm(dep.VM.ID, "Destroyed")
			a.mu.Lock()
			a.destroys++
			a.mu.Unlock()
		}
	}
}

// envInt and envDuration read the load's size from the environment (for measuring by hand).
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// kill -9 of the server with --state under concurrent clients, then a restart on the same state
// (issue 35): the restarted server answers listVirtualMachines within a bound, and keeps every write
// it acknowledged: each VM whose deploy was answered is there, Running when its deploy job was seen
// to succeed and no destroy followed, expunged when its destroy was seen to succeed; each job seen
// done is still done with the same status. Before the fix a start the kill caught before the planner
// chose a host left a VM with no host id, whose forced stop Start waited on for vm.job.timeout (600 s)
// each: the restarted server accepted TCP and answered nothing. The load's size is
// CSCONFORM_KILL_CLIENTS clients (default 30) for CSCONFORM_KILL_LOAD (default 3s), and
// CSCONFORM_KILL_HALF half-started VMs (default 10), for measuring by hand; the test prints the figures.
func TestServerRestartAfterKillUnderLoad(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it in real time: about 20 s
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	clients := envInt("CSCONFORM_KILL_CLIENTS", 30)
	load := envDuration("CSCONFORM_KILL_LOAD", 3*time.Second)
	dir := t.TempDir()
	bin := buildCSConform(t)
	state := filepath.Join(dir, "ms", "db.json")
	hist := filepath.Join(dir, "history.jsonl")
	agentAddr, controlAddr := freeAddr(t), freeAddr(t)
	start := func() (*proc, time.Time) {
		began := time.Now()
		p, _ := startProc(t, bin, "server", "--listen", agentAddr, "--control", controlAddr, "--state", state, "--profile", "fixed",
			"--history", hist, "--config", "ping.interval=1", "--config", "vm.job.check.interval=200")
		return p, began
	}
	base := "http://" + controlAddr
	const quick = 2 * time.Second
	answers := func() bool {
		var vms []json.RawMessage
		return try(quick, base, "listVirtualMachines", nil, &vms) == nil
	}
	srv, _ := start()
	poll(t, 15*time.Second, "the server to answer", answers)
	for _, h := range []string{"h1", "h2"} {
		startProc(t, bin, "agent", "--host", h, "--server", agentAddr)
	}
	poll(t, 15*time.Second, "h1 and h2 Up", func() bool {
		var hosts []struct{ ID, Status string }
		call(t, base, "listHosts", nil, &hosts)
		return len(hosts) == 2 && hosts[0].Status == "Up" && hosts[1].Status == "Up"
	})
	// a network per ten clients, their routers running before the load
	var nets []int64
	for i := range (clients + 9) / 10 {
		var n struct{ ID int64 }
		call(t, base, "createNetwork", url.Values{"name": {fmt.Sprintf("guest%d", i)}, "poolsize": {"240"}}, &n)
		nets = append(nets, n.ID)
		var dep struct {
			JobID int64 `json:"jobid"`
			VM    struct{ ID int64 }
		}
		call(t, base, "deployVirtualMachine", url.Values{"networkids": {fmt.Sprint(n.ID)}}, &dep)
		var res struct{ Succeeded bool }
		call(t, base, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(dep.JobID)}, "wait": {"60s"}}, &res)
		if !res.Succeeded {
			t.Fatalf("deploy into network %d failed", n.ID)
		}
	}

	a := &acked{vms: map[int64]string{}, jobs: map[int64]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); loadClient(base, nets[i%len(nets)], stop, a) }()
	}
	time.Sleep(load)
	srv.cmd.Process.Kill() // SIGKILL
	srv.waitExit(t)
	close(stop)
	wg.Wait() // every client has had its last answer (or error) from the dead server

	// What the kill leaves depends on where it caught each start. So that the restart always meets the
	// case of the issue, the dead server's database also gets what a kill between changeToStartState and
	// the planner leaves: VMs Starting with no host id, each with its op_it_work row.
	halfStarted := envInt("CSCONFORM_KILL_HALF", 10)
	var half []int64
	{
		env := live.NewEnv()
		db, err := impl.OpenDB(env, nil, state)
		if err != nil {
			t.Fatal(err)
		}
		for range halfStarted {
			v := db.CreateVM("api", "", "User", nets[:1])
			db.CreateNic(v.ID, nets[0])
			db.CreateVolume("api", v.ID)
			if !db.UpdateVMState("Work-Job-Executor", v, vm.StartRequested, vm.Starting, "") {
				t.Fatalf("VM %d: Stopped → Starting refused", v.ID)
			}
			db.PersistItWork("ms1", vm.Starting, v.ID)
			half = append(half, v.ID)
		}
		db.Detach()
		env.Close()
	}

	mark, _ := os.ReadFile(hist)
	_, began := start()
	poll(t, 60*time.Second, "the restarted server to answer listVirtualMachines", answers)
	took := time.Since(began)
	h, _ := os.ReadFile(hist)
	restart := string(h[len(mark):])
	t.Logf("%d clients for %s: %d deploys and %d destroys acknowledged, %d jobs seen done; after the restart %d unfinished work items, %d of them a VM with no host; listVirtualMachines answered %.1f s after the restart",
		clients, load, a.deploys, a.destroys, len(a.jobs), strings.Count(restart, "Handling unfinished work item"),
		strings.Count(restart, "restarted but has no host id"), took.Seconds())
	if took > 30*time.Second {
		t.Errorf("the restarted server answered listVirtualMachines only %.1f s after it started", took.Seconds())
	}

	var vms []struct {
		ID      int64
		Name    string
		State   string
		Removed bool
	}
	call(t, base, "listVirtualMachines", nil, &vms)
	byID := map[int64]int{}
	for i, v := range vms {
		byID[v.ID] = i
	}
	lost := 0
	for id, what := range a.vms {
		i, ok := byID[id]
		if !ok {
			t.Errorf("VM %d (deploy acknowledged, %q) is gone after the restart", id, what)
			lost++
			continue
		}
		v := vms[i]
		switch {
		case what == "Running" && (v.Removed || v.State != "Running"):
			t.Errorf("VM %s was Running, not destroyed: after the restart it is %s (removed %v)", v.Name, v.State, v.Removed)
			lost++
		case what == "Destroyed" && !v.Removed && v.State != "Destroyed" && v.State != "Expunging":
			t.Errorf("VM %s was destroyed (expunge): after the restart it is %s", v.Name, v.State)
			lost++
		}
	}
	for id, status := range a.jobs {
		var res struct{ Job struct{ Status string } }
		call(t, base, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(id)}}, &res)
		if res.Job.Status != status {
			t.Errorf("job %d was seen %s; after the restart it is %s", id, status, res.Job.Status)
			lost++
		}
	}
	t.Logf("acknowledged writes lost: %d", lost)

	// the clean-up happens after all: the half-started VMs are force-stopped and handed to HA
	poll(t, 60*time.Second, "the half-started VMs Stopped", func() bool {
		call(t, base, "listVirtualMachines", nil, &vms)
		stopped := 0
		for _, v := range vms {
			if slices.Contains(half, v.ID) && v.State == "Stopped" {
				stopped++
			}
		}
		return stopped == len(half)
	})
	poll(t, 10*time.Second, "the half-started VMs handed to HA", func() bool {
		h, _ := os.ReadFile(hist)
		handed := map[string]bool{}
		for _, line := range strings.Split(string(h[len(mark):]), "\n") {
			var e history.Event
			if json.Unmarshal([]byte(line), &e) == nil && strings.HasPrefix(e.Detail, "Schedule vm for HA: ") {
				handed[e.Object] = true
			}
		}
		for _, id := range half {
			if !handed[impl.VMObject(id)] {
				return false
			}
		}
		return true
	})
	t.Logf("the %d half-started VMs Stopped and handed to HA %.1f s after the restart", len(half), time.Since(began).Seconds())
}

// SIGTERM of the server with --state under concurrent clients (issue 49): every write the server
// answered with success is in the state it leaves. The server stops serving the control endpoint and
// the API first, lets the requests in flight finish, and detaches its state file last. Before, it
// detached the file first and went on answering: 12–19 acknowledged VMs and 46–49 jobs were lost a
// run. The load is as TestServerRestartAfterKillUnderLoad's (CSCONFORM_KILL_CLIENTS, _LOAD).
func TestServerKeepsAcknowledgedWritesOnSIGTERM(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it in real time: about 10 s
	t.Parallel()
	clients := envInt("CSCONFORM_KILL_CLIENTS", 30)
	load := envDuration("CSCONFORM_KILL_LOAD", 3*time.Second)
	dir := t.TempDir()
	bin := buildCSConform(t)
	state := filepath.Join(dir, "ms", "db.json")
	agentAddr, controlAddr := freeAddr(t), freeAddr(t)
	srv, _ := startProc(t, bin, "server", "--listen", agentAddr, "--control", controlAddr, "--state", state, "--profile", "fixed",
		"--config", "ping.interval=1", "--config", "vm.job.check.interval=200")
	base := "http://" + controlAddr
	poll(t, 15*time.Second, "the server to answer", func() bool {
		var vms []json.RawMessage
		return try(2*time.Second, base, "listVirtualMachines", nil, &vms) == nil
	})
	for _, h := range []string{"h1", "h2"} {
		startProc(t, bin, "agent", "--host", h, "--server", agentAddr)
	}
	poll(t, 15*time.Second, "h1 and h2 Up", func() bool {
		var hosts []struct{ ID, Status string }
		call(t, base, "listHosts", nil, &hosts)
		return len(hosts) == 2 && hosts[0].Status == "Up" && hosts[1].Status == "Up"
	})
	var nets []int64
	for i := range (clients + 9) / 10 {
		var n struct{ ID int64 }
		call(t, base, "createNetwork", url.Values{"name": {fmt.Sprintf("guest%d", i)}, "poolsize": {"240"}}, &n)
		nets = append(nets, n.ID)
		// its router running before the load, so that jobs finish (and are waited on) as SIGTERM comes
		var dep struct {
			JobID int64 `json:"jobid"`
		}
		call(t, base, "deployVirtualMachine", url.Values{"networkids": {fmt.Sprint(n.ID)}}, &dep)
		var res struct{ Succeeded bool }
		call(t, base, "queryAsyncJobResult", url.Values{"jobid": {fmt.Sprint(dep.JobID)}, "wait": {"60s"}}, &res)
		if !res.Succeeded {
			t.Fatalf("deploy into network %d failed", n.ID)
		}
	}

	a := &acked{vms: map[int64]string{}, jobs: map[int64]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); loadClient(base, nets[i%len(nets)], stop, a) }()
	}
	// and clients whose writes are answered at once (createNetwork), so that some are in flight
	// whenever SIGTERM comes, not only when a job happens to finish then
	var netMu sync.Mutex
	var created []int64
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				var n struct{ ID int64 }
				if try(time.Minute, base, "createNetwork", url.Values{"name": {fmt.Sprintf("w%d-%d", i, j)}, "poolsize": {"4"}}, &n) != nil {
					return
				}
				netMu.Lock()
				created = append(created, n.ID)
				netMu.Unlock()
			}
		}()
	}
	time.Sleep(load)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := srv.waitExit(t); code != 0 {
		t.Fatalf("the server exited %d at SIGTERM", code)
	}
	close(stop)
	wg.Wait()

	env := live.NewEnv()
	defer env.Close()
	db, err := impl.OpenDB(env, nil, state)
	if err != nil {
		t.Fatal(err)
	}
	vms := map[int64]*impl.VMVO{}
	for _, v := range db.VMs(nil) {
		vms[v.ID] = v
	}
	lost := 0
	for id, what := range a.vms {
		v := vms[id]
		switch {
		case v == nil:
			t.Errorf("VM %d (deploy acknowledged, %q) is not in the state the server left", id, what)
		case what == "Running" && (v.Removed || v.State != vm.Running):
			t.Errorf("VM %d was Running, not destroyed: in the state left it is %s (removed %v)", id, v.State, v.Removed)
		case what == "Destroyed" && !v.Removed && v.State != vm.Destroyed && v.State != vm.Expunging:
			t.Errorf("VM %d was destroyed (expunge): in the state left it is %s", id, v.State)
		default:
			continue
		}
		lost++
	}
	nws := map[int64]bool{}
	for _, n := range db.Networks(nil) {
		nws[n.ID] = !n.Removed
	}
	for _, id := range created {
		if !nws[id] {
			t.Errorf("network %d (createNetwork answered) is not in the state the server left", id)
			lost++
		}
	}
	for id, status := range a.jobs {
		if j := db.Job(id); j == nil || string(j.Status) != status {
			t.Errorf("job %d was seen %s; in the state left it is %+v", id, status, j)
			lost++
		}
	}
	statuses := map[string]int{}
	for _, s := range a.jobs {
		statuses[s]++
	}
	t.Logf("%d clients for %s, then SIGTERM: %d deploys, %d destroys and %d networks acknowledged, %d jobs seen done %v; acknowledged writes lost: %d",
		clients, load, a.deploys, a.destroys, len(created), len(a.jobs), statuses, lost)
}
