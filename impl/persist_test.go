package impl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is an Env whose time moves a second at each look: enough for the store, which only reads time.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time            { c.t = c.t.Add(time.Second); return c.t }
func (c *clock) Sleep(time.Duration)       {}
func (c *clock) Go(string, func())         {}
func (c *clock) NewSignal() Signal         { return nil }
func newClock() *clock                     { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (e *logEvents) Emit(ev history.Event) { *e = append(*e, ev) }

type logEvents []history.Event

// populate writes one of every kind of row, as a deploy, a stop and the host's connect would.
func populate(t *testing.T, db *DB) {
	t.Helper()
	if _, ok := db.HostTransit("ms1", "h1", host.AgentConnected, "ms1"); !ok {
		t.Fatal("AgentConnected refused")
	}
	db.HostTransit("ms1", "h1", host.Ready, "ms1")
	db.SetLastPinged("h1", time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	n := db.CreateNetwork("api", "net1", true, 4)
	db.UpdateNetworkState("ms1", n, network.Implementing, "implement", false)
	r := db.CreateVM("ms1", "", "DomainRouter", []int64{n.ID})
	db.SetNetworkRouter(n.ID, r.ID)
	v := db.CreateVM("api", "web1", "User", []int64{n.ID})
	nic := db.CreateNic(v.ID, n.ID)
	db.SetNicState(nic.ID, "Reserved")
	if ip := db.ReserveIP("ms1", nic.ID); ip == "" {
		t.Fatal("no address reserved")
	}
	db.ChangeActiveNicsBy(n.ID, 1)
	vol := db.CreateVolume("api", v.ID)
	db.SetVolumeState("ms1", vol.ID, "Ready")
	if !db.UpdateVMState("ms1", v, vm.StartRequested, vm.Starting, "h1") || !db.UpdateVMState("ms1", v, vm.OperationSucceeded, vm.Running, "h1") {
		t.Fatal("VM state writes refused")
	}
	db.UpdatePowerState("ms1", v.ID, vm.PowerOn, "h1", time.Time{})
	done := db.CreateJob("api", "DeployVM", "VirtualMachine", v.ID, "ms1")
	db.CompleteJob("ms1", done.ID, job.Succeeded, 0, "ok")
	db.CreateJob("api", "VmWorkStop", "VirtualMachine", v.ID, "ms1")
	if !db.TryLock(NetworkLockKey(n.ID), "ms1", "Job-Executor-1") || !db.TryLock("vm_instance1", "ms2", "Job-Executor-7") {
		t.Fatal("locks refused")
	}
	gone := db.CreateVM("api", "old", "User", nil)
	db.RemoveVM("ms1", gone.ID)
	w := db.PersistItWork("ms1", vm.Starting, v.ID)
	db.UpdateItWorkStep(w.ID, ItWorkDone)
	db.PersistHaWork(HaWorkVO{Type: haRestart, VMID: v.ID, HostID: "h1", Step: haInvestigating, Reason: reasonHostDown})
	db.TakeHaWork("ms2")
}

// onDisk is what a process started now would load from path (read only, unlike OpenDB).
func onDisk(t *testing.T, path string) []byte {
	t.Helper()
	db, _, err := readDB(newClock(), nil, path)
	require.NoError(t, err)
	return encoded(t, db)
}

func encoded(t *testing.T, db *DB) []byte {
	t.Helper()
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The state file holds every row of every table, and a database opened on it holds the same rows.
func TestDBRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db", "state.json")
	var ev logEvents
	db, err := OpenDB(newClock(), &ev, path)
	if err != nil {
		t.Fatal(err)
	}
	populate(t, db)
	back, err := OpenDB(newClock(), nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := encoded(t, db), encoded(t, back); !bytes.Equal(a, b) {
		t.Fatalf("loaded database differs:\n--- written\n%s\n--- loaded\n%s", a, b)
	}
	// every table has rows, so the comparison above covered them all
	if len(back.VMs(nil)) != 3 || len(back.Networks(nil)) != 1 || len(back.Nics(3)) != 1 || len(back.Volumes(0)) != 1 ||
		len(back.Hosts()) != 1 || len(back.Jobs(nil)) != 2 || len(back.Locks()) != 2 || back.ItWork(1) == nil ||
		len(back.haWorkRows()) != 1 || back.haWorkRows()[0].ServerID != "ms2" {
		t.Fatalf("tables missing rows: vms %d networks %d volumes %d hosts %d jobs %d locks %d",
			len(back.VMs(nil)), len(back.Networks(nil)), len(back.Volumes(0)), len(back.Hosts()), len(back.Jobs(nil)), len(back.Locks()))
	}
	if pool := back.IPPool(1); pool[0].VMID != 3 {
		t.Fatalf("pool after loading: %+v", pool)
	}
	for _, e := range ev {
		if e.Level == "ERROR" {
			t.Errorf("unexpected error: %s", e.Detail)
		}
	}
}

// A loaded database behaves as the one that wrote it: the same writes give the same answers and the
// same rows (ids go on from where they were, compare-and-set sees the same update counts, the pool
// hands out the same next address, a lock held by another server stays held).
func TestLoadedDBBehavesTheSame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	orig, err := OpenDB(newClock(), nil, path)
	if err != nil {
		t.Fatal(err)
	}
	populate(t, orig)
	orig.Detach() // from here both run in memory only, side by side
	loaded, err := OpenDB(newClock(), nil, path)
	if err != nil {
		t.Fatal(err)
	}
	loaded.Detach()
	// the clocks must agree from here on
	orig.env, loaded.env = newClock(), newClock()
	type answer struct {
		what string
		got  any
	}
	run := func(db *DB) []answer {
		v := db.VMByName("web1")
		stale := *v
		var out []answer
		out = append(out, answer{"stop", db.UpdateVMState("ms1", v, vm.StopRequested, vm.Stopping, "h1")})
		out = append(out, answer{"stale write", db.UpdateVMState("ms1", &stale, vm.StopRequested, vm.Stopping, "h1")})
		w := db.CreateVM("api", "web2", "User", []int64{1})
		out = append(out, answer{"new id", w.ID})
		nic := db.CreateNic(w.ID, 1)
		out = append(out, answer{"next address", db.ReserveIP("ms1", nic.ID)})
		out = append(out, answer{"foreign lock", db.TryLock("vm_instance1", "ms1", "Job-Executor-1")})
		out = append(out, answer{"own lock", db.TryLock(NetworkLockKey(1), "ms1", "Job-Executor-1")})
		db.CleanupLocksForServer("ms1")
		out = append(out, answer{"locks after cleanup", len(db.Locks())})
		out = append(out, answer{"job in progress", len(db.Jobs(func(j *JobVO) bool { return j.Status == job.InProgress }))})
		return out
	}
	a, b := run(orig), run(loaded)
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("%s: written database says %v, loaded one %v", a[i].what, a[i].got, b[i].got)
		}
	}
	if x, y := encoded(t, orig), encoded(t, loaded); !bytes.Equal(x, y) {
		t.Fatalf("after the same writes the databases differ:\n%s\n---\n%s", x, y)
	}
}

// Every commit is on disk before the write returns: a process killed right after any write finds it
// on restart. After Detach (a stopping server) nothing more reaches the file.
func TestEveryCommitIsDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	db, err := OpenDB(newClock(), nil, path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		if !bytes.Equal(onDisk(t, path), encoded(t, db)) {
			t.Fatalf("after %s the state file lags the database", what)
		}
	}
	n := db.CreateNetwork("api", "n", false, 2)
	check("CreateNetwork")
	v := db.CreateVM("api", "a", "User", []int64{n.ID})
	check("CreateVM")
	db.UpdateVMState("ms1", v, vm.StartRequested, vm.Starting, "h1")
	check("UpdateVMState")
	db.TryLock("k", "ms1", "t")
	check("TryLock")
	db.Unlock("k", "ms1", "t")
	check("Unlock")
	j := db.CreateJob("api", "StartVM", "VirtualMachine", v.ID, "ms1")
	check("CreateJob")

	files := func() []byte {
		a, _ := os.ReadFile(path)
		b, _ := os.ReadFile(path + ".log")
		return append(a, b...)
	}
	before := files()
	db.Detach()
	db.CompleteJob("ms1", j.ID, job.Failed, 530, "interrupted")
	db.CreateVM("api", "b", "User", nil)
	if !bytes.Equal(before, files()) {
		t.Fatal("writes after Detach reached the state file")
	}
	for _, tmp := range []string{path + ".tmp", path + ".log.tmp"} {
		if _, err := os.Stat(tmp); err == nil {
			t.Fatal("a temporary file was left beside the state file")
		}
	}
}

// Bad state files are refused with a clear error, never loaded half.
func TestOpenDBErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, content, want string }{
		{"garbage", "not json", "invalid character"},
		{"future", `{"Version": 99}`, "version 99"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenDB(newClock(), nil, p); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, p, c.want)
			}
		})
	}
	if _, err := OpenDB(newClock(), nil, filepath.Join(dir, "garbage", "sub", "x")); err == nil {
		t.Fatal("a state file under a regular file was accepted")
	}
}

// A state file the server could not run on is refused with an error naming the file and the row, never
// loaded (a null row used to panic; a NextID below an existing id made the next deploy replace a row; a
// negative one named a VM i-2--4-VM).
func TestOpenDBRefusesBrokenTables(t *testing.T) {
	src := filepath.Join(t.TempDir(), "good.json")
	db, err := OpenDB(newClock(), nil, src)
	if err != nil {
		t.Fatal(err)
	}
	populate(t, db)
	good := encoded(t, db)
	cases := []struct {
		name   string
		break_ func(f map[string]any)
		want   string
	}{
		{"null VM", func(f map[string]any) { f["VMs"].([]any)[1] = nil }, "VMs[1] is null"},
		{"null network", func(f map[string]any) { f["Networks"].([]any)[0] = nil }, "Networks[0] is null"},
		{"null NIC", func(f map[string]any) { f["Nics"].([]any)[0] = nil }, "Nics[0] is null"},
		{"null volume", func(f map[string]any) { f["Volumes"].([]any)[0] = nil }, "Volumes[0] is null"},
		{"null host", func(f map[string]any) { f["Hosts"].([]any)[0] = nil }, "Hosts[0] is null"},
		{"null job", func(f map[string]any) { f["Jobs"].([]any)[0] = nil }, "Jobs[0] is null"},
		{"null lock", func(f map[string]any) { f["Locks"].([]any)[0] = nil }, "Locks[0] is null"},
		{"null address", func(f map[string]any) { f["IPs"].(map[string]any)["1"].([]any)[2] = nil }, "IPs[1][2] is null"},
		{"NextID below an id", func(f map[string]any) { f["NextID"] = 3 }, "NextID 3 is below the highest id in use"},
		{"negative NextID", func(f map[string]any) { f["NextID"] = -4 }, "NextID -4"},
		{"negative NextID, no rows", func(f map[string]any) {
			for _, k := range []string{"VMs", "Networks", "Nics", "Volumes", "Jobs", "Hosts", "Locks"} {
				f[k] = []any{}
			}
			f["IPs"] = map[string]any{}
			f["NextID"] = -4
		}, "NextID -4"},
		{"id 0", func(f map[string]any) { f["Volumes"].([]any)[0].(map[string]any)["ID"] = 0 }, "Volumes[0] has key 0"},
		{"empty host id", func(f map[string]any) { f["Hosts"].([]any)[0].(map[string]any)["ID"] = "" }, "Hosts[0] has key"},
		{"duplicate id", func(f map[string]any) { vs := f["VMs"].([]any); f["VMs"] = append(vs, vs[0]) }, "a second row with key 2"},
		{"NIC on a missing network", func(f map[string]any) { f["Nics"].([]any)[0].(map[string]any)["NetworkID"] = 77 }, "NIC 4 is on network 77, which does not exist"},
		{"NIC of a missing VM", func(f map[string]any) { f["Nics"].([]any)[0].(map[string]any)["VMID"] = 77 }, "NIC 4 belongs to VM 77"},
		{"VM on a missing network", func(f map[string]any) { f["VMs"].([]any)[1].(map[string]any)["NetworkIDs"] = []any{1, 9} }, "VM 3 is on network 9"},
		{"router missing", func(f map[string]any) { f["Networks"].([]any)[0].(map[string]any)["RouterID"] = 50 }, "router 50"},
		{"volume of a missing VM", func(f map[string]any) { f["Volumes"].([]any)[0].(map[string]any)["VMID"] = 50 }, "VM 50"},
		{"pool of a missing network", func(f map[string]any) { f["IPs"].(map[string]any)["8"] = []any{} }, "pool for network 8"},
		{"job on a missing VM", func(f map[string]any) { f["Jobs"].([]any)[0].(map[string]any)["InstanceID"] = 50 }, "job 6 is on VM 50"},
		{"unknown VM state", func(f map[string]any) { f["VMs"].([]any)[0].(map[string]any)["State"] = "Flying" }, `unknown state "Flying"`},
		{"unknown job status", func(f map[string]any) { f["Jobs"].([]any)[0].(map[string]any)["Status"] = "" }, `job 6: unknown status ""`},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f map[string]any
			require.NoError(t, json.Unmarshal(good, &f))
			c.break_(f)
			b, err := json.Marshal(f)
			require.NoError(t, err)
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			require.NoError(t, os.WriteFile(p, b, 0o600))
			_, err = OpenDB(newClock(), nil, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// Detach does not wait for the lock: a stopping server behind a queue of writers (each fsyncing)
// detaches at once. If Detach took the lock, this test would deadlock.
func TestDetachDoesNotWaitForTheLock(t *testing.T) {
	db, err := OpenDB(newClock(), nil, filepath.Join(t.TempDir(), "state.json"))
	require.NoError(t, err)
	db.mu.Lock() // a writer in the middle of its commit
	db.Detach()
	db.mu.Unlock()
	require.True(t, db.detached.Load())
}

// A state file or log over its cap (MaxStateFile, MaxStateLog) is refused with an error naming the
// file and the cap, without reading it whole: a device such as /dev/zero used to be read until memory
// ran out (2.5 GB in 20 s).
func TestOpenDBCapsItsFiles(t *testing.T) {
	dir := t.TempDir()
	big := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size)) // sparse: nothing is written
		require.NoError(t, f.Close())
		return p
	}
	snap := big("big.json", MaxStateFile+1)
	_, err := OpenDB(newClock(), nil, snap)
	require.Error(t, err)
	assert.Contains(t, err.Error(), snap)
	assert.Contains(t, err.Error(), "256 MiB")

	good := filepath.Join(dir, "good.json")
	db, err := OpenDB(newClock(), nil, good)
	require.NoError(t, err)
	populate(t, db)
	require.NoError(t, os.Remove(good+".log"))
	big("good.json.log", MaxStateLog+1)
	_, err = OpenDB(newClock(), nil, good)
	require.Error(t, err)
	assert.Contains(t, err.Error(), good+".log")
	assert.Contains(t, err.Error(), "768 MiB")

	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err = OpenDB(newClock(), nil, "/dev/zero")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "/dev/zero")
		assert.Contains(t, err.Error(), "256 MiB")
	}
}

// Counters near their limit: a state file whose NextID or Generation the next increment would take
// past MaxCounter is refused at load (at 2^63-1 the next network got a negative id and the CIDR
// 10.-36893488147419102.-58, a deploy panicked and the next start refused its own log), and a server
// whose ids reach the limit writes no file the loader refuses: it refuses the write instead.
func TestCountersAtTheirLimit(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "good.json")
	db, err := OpenDB(newClock(), nil, src)
	require.NoError(t, err)
	populate(t, db)
	good := encoded(t, db)
	for _, c := range []struct {
		name  string
		field string
		value int64
		want  string
	}{
		{"NextID max", "NextID", 1<<63 - 1, "NextID 9223372036854775807 is past the limit"},
		{"NextID past", "NextID", MaxCounter + 1, "is past the limit"},
		{"Generation max", "Generation", 1<<63 - 1, "generation 9223372036854775807"},
		{"Generation at the limit", "Generation", MaxCounter, "generation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f map[string]any
			require.NoError(t, json.Unmarshal(good, &f))
			f[c.field] = c.value
			b, err := json.Marshal(f)
			require.NoError(t, err)
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			require.NoError(t, os.WriteFile(p, b, 0o600))
			_, err = OpenDB(newClock(), nil, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), c.want)
		})
	}

	// one id left: the network gets it and a valid CIDR; the next is refused, not written
	var f map[string]any
	require.NoError(t, json.Unmarshal(good, &f))
	f["NextID"] = MaxCounter - 1
	b, err := json.Marshal(f)
	require.NoError(t, err)
	p := filepath.Join(dir, "last-id.json")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	db, err = OpenDB(newClock(), nil, p)
	require.NoError(t, err)
	n, err := db.NewNetwork("api", "last", false, 4)
	require.NoError(t, err)
	assert.Equal(t, int64(MaxCounter), n.ID)
	assert.Regexp(t, `^10\.([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\.([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])$`, n.CIDR)
	_, err = db.NewNetwork("api", "one-too-many", false, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ids")
	// a row made past the limit anyway (a VM) is not written: the file still loads
	db.CreateVM("api", "", "User", []int64{n.ID})
	_, err = OpenDB(newClock(), nil, p)
	require.NoError(t, err, "the server wrote a state file its next start refuses")
}

// A network's CIDR is 10.(1+id/250).(id%250) as it always was while that is an address (ids below
// 63,750: the simulator's histories keep their addresses); past it, the first /24 of 10.0.0.0/8 no
// network holds (10.256.x was handed out before), and when there is none the create is refused.
func TestNetworkCIDRsStayValid(t *testing.T) {
	db := NewDB(newClock(), nil)
	for id, want := range map[int64]string{1: "10.1.1", 249: "10.1.249", 250: "10.2.0", 63749: "10.255.249"} {
		db.nextID = id - 1
		n, err := db.NewNetwork("api", "n", false, 1)
		require.NoError(t, err)
		assert.Equal(t, want, n.CIDR, "network %d", id)
	}
	seen := map[string]bool{}
	for _, n := range db.Networks(nil) {
		seen[n.CIDR] = true
	}
	db.nextID = 63749
	for i := 0; i < 300; i++ {
		n, err := db.NewNetwork("api", "n", false, 1)
		require.NoError(t, err)
		var a, b int
		_, err = fmt.Sscanf(n.CIDR, "10.%d.%d", &a, &b)
		require.NoError(t, err, n.CIDR)
		require.True(t, a >= 0 && a <= 255 && b >= 0 && b <= 255, "network %d: CIDR %s", n.ID, n.CIDR)
		require.False(t, seen[n.CIDR], "network %d: CIDR %s taken twice", n.ID, n.CIDR)
		seen[n.CIDR] = true
		pool := db.ips[n.ID]
		require.Equal(t, n.CIDR+".10", pool[0].Address)
	}
}
