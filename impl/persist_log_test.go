package impl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
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

// commitMethods lists the DB methods in store.go and itwork.go that end in commit: every one of them
// writes.
func commitMethods(t *testing.T) []string {
	t.Helper()
	var decls []ast.Decl
	for _, file := range []string{"store.go", "itwork.go", "hawork.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		require.NoError(t, err)
		decls = append(decls, f.Decls...)
	}
	var out []string
	for _, d := range decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if df, ok := n.(*ast.DeferStmt); ok {
				if sel, ok := df.Call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "commit" {
					out = append(out, fn.Name.Name)
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

// Every write method reaches the log: after each, a process started on the files loads exactly the
// database in memory. The table must name every method of store.go that commits, so a new write
// method that forgets to mark its rows (touch) fails here.
func TestEveryWriteReachesTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	var n *NetworkVO
	var v *VMVO
	var nic *NicVO
	var vol *VolumeVO
	var j *JobVO
	writes := []struct {
		method string
		do     func()
	}{
		{"HostTransit", func() { db.HostTransit("ms1", "h1", host.AgentConnected, "ms1") }},
		{"SetLastPinged", func() { db.SetLastPinged("h1", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }},
		{"SetHostResourceState", func() { db.SetHostResourceState("h1", ResourceDisabled) }},
		{"MarkHostsAsDisconnected", func() {
			require.Equal(t, []string{"h1"}, db.MarkHostsAsDisconnected("ms2", "ms1", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
			db.HostTransit("ms1", "h1", host.AgentConnected, "ms1")
		}},
		{"NewNetwork", func() { n, _ = db.NewNetwork("api", "n", false, 3) }},
		{"UpdateNetworkState", func() { db.UpdateNetworkState("ms1", n, network.Implementing, "implement", false) }},
		{"SetNetworkCreated", func() { require.NoError(t, db.SetNetworkCreated(n.ID, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))) }},
		{"CreateVM", func() { v = db.CreateVM("api", "", "User", []int64{n.ID}) }},
		{"SetNetworkRouter", func() { db.SetNetworkRouter(n.ID, v.ID) }},
		{"SetHAEnabled", func() { db.SetHAEnabled(v.ID, true) }},
		{"SetVMNames", func() { db.SetVMNames(v.ID, "web-1", "the web server") }},
		{"CreateNic", func() { nic = db.CreateNic(v.ID, n.ID) }},
		{"SetNicState", func() { db.SetNicState(nic.ID, "Reserved") }},
		{"ReserveIP", func() { require.NotEmpty(t, db.ReserveIP("ms1", nic.ID)) }},
		{"ChangeActiveNicsBy", func() { db.ChangeActiveNicsBy(n.ID, 1) }},
		{"ClearCheckForGC", func() { db.ClearCheckForGC(n.ID) }},
		{"SetCheckForGC", func() { db.SetCheckForGC(n.ID) }},
		{"CreateVolume", func() { vol = db.CreateVolume("api", v.ID) }},
		{"SetVolumeState", func() { db.SetVolumeState("ms1", vol.ID, "Ready") }},
		{"UpdateVMState", func() { require.True(t, db.UpdateVMState("ms1", v, vm.StartRequested, vm.Starting, "h1")) }},
		{"UpdateVMStates", func() {
			require.Equal(t, 2, db.UpdateVMStates("ms1", v, "h1", VMTransition{vm.OperationSucceeded, vm.Running}, VMTransition{vm.StopRequested, vm.Stopping}))
		}},
		{"UpdateVMStateIfCurrent", func() {
			stale := *v
			require.True(t, db.UpdateVMStateIfCurrent("ms1", v, vm.OperationFailed, vm.Running, "h1"))
			require.False(t, db.UpdateVMStateIfCurrent("ms1", &stale, vm.OperationFailed, vm.Running, "h1"), "a copy the row has moved past")
		}},
		{"UpdatePowerState", func() { require.True(t, db.UpdatePowerState("ms1", v.ID, vm.PowerOn, "h1", time.Time{})) }},
		{"SetPowerState", func() { db.SetPowerState("ms1", v.ID, vm.PowerOff) }},
		{"ResetVMPowerStateTracking", func() { db.ResetVMPowerStateTracking(v.ID) }},
		{"ResetHostPowerStateTracking", func() {
			db.UpdatePowerState("ms1", v.ID, vm.PowerOn, "h1", time.Time{})
			db.ResetHostPowerStateTracking("h1")
		}},
		{"StopVMsOfRemovedHost", func() {
			require.Equal(t, []int64{v.ID}, db.StopVMsOfRemovedHost("ms1", "h1"))
			require.True(t, db.UpdateVMState("ms1", db.VM(v.ID), vm.StartRequested, vm.Starting, "h1")) // on h1 again for what follows
		}},
		{"CreateJob", func() { j = db.CreateJob("api", "StartVM", "VirtualMachine", v.ID, "ms1") }},
		{"CompleteJob", func() { db.CompleteJob("ms1", j.ID, job.Succeeded, 0, "ok") }},
		{"ExpungeJob", func() { db.ExpungeJob("ms1", db.CreateJob("api", "VmWorkStop", "VirtualMachine", v.ID, "ms1").ID) }},
		{"TryLock", func() {
			require.True(t, db.TryLock("k1", "ms1", "t1"))
			require.True(t, db.TryLock("k1", "ms1", "t1"))
			require.True(t, db.TryLock("k2", "ms1", "t2"))
		}},
		{"Unlock", func() { db.Unlock("k1", "ms1", "t1"); db.Unlock("k1", "ms1", "t1") }},
		{"CleanupLocksForServer", func() { db.CleanupLocksForServer("ms1") }},
		{"ReleaseIP", func() { db.ReleaseIP("ms1", nic.ID) }},
		{"RemoveNic", func() { db.RemoveNic(nic.ID) }},
		{"RemoveVM", func() { db.RemoveVM("ms1", v.ID) }},
		{"PersistItWork", func() { db.PersistItWork("ms1", vm.Starting, v.ID) }},
		{"UpdateItWorkStep", func() { require.True(t, db.UpdateItWorkStep(1, ItWorkStarting)) }},
		{"PersistHaWork", func() { db.PersistHaWork(HaWorkVO{Type: haRestart, VMID: v.ID, HostID: "h1", Step: haInvestigating}) }},
		{"TakeHaWork", func() { require.NotNil(t, db.TakeHaWork("ms1")) }},
		{"UpdateHaWork", func() {
			w := db.HaWorkOf(v.ID)[0]
			w.TimesTried++
			require.True(t, db.UpdateHaWork(w))
		}},
		{"ReleaseHaWorkItems", func() { require.Equal(t, 1, db.ReleaseHaWorkItems("ms1")) }},
		{"MarkPendingHaWorksAsInvestigating", func() {
			db.PersistHaWork(HaWorkVO{Type: haCheckStop, VMID: v.ID, HostID: "h1", Step: haScheduled})
			require.Equal(t, 1, db.MarkPendingHaWorksAsInvestigating())
		}},
		{"RemoveNetwork", func() { db.RemoveNetwork("ms1", n.ID) }},
	}
	var covered []string
	for _, w := range writes {
		w.do()
		require.Equal(t, string(encoded(t, db)), string(onDisk(t, path)), "after %s", w.method)
		covered = append(covered, w.method)
	}
	slices.Sort(covered)
	assert.Equal(t, commitMethods(t), covered, "the table must cover every write method of store.go, itwork.go and hawork.go")
}

func populateOnDisk(t *testing.T, path string) *DB {
	t.Helper()
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	populate(t, db)
	return db
}

// A kill -9 at any moment leaves files that load: the log cut at any byte (a torn last record) loads
// as the database after the last whole record, with a WARN saying a torn record was dropped.
func TestKillAtAnyByteLoads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	db := populateOnDisk(t, path)
	db.Detach()
	snap, err := os.ReadFile(path)
	require.NoError(t, err)
	log, err := os.ReadFile(path + ".log")
	require.NoError(t, err)
	// the database after each whole record, by replaying prefixes
	var ends []int
	var states [][]byte
	for off := logHeaderLen; ; {
		ends = append(ends, off)
		part := NewDB(newClock(), nil)
		_, err := part.load(snap, log[:off])
		require.NoError(t, err)
		states = append(states, encoded(t, part))
		if off == len(log) {
			break
		}
		off += 8 + int(uint32(log[off])|uint32(log[off+1])<<8|uint32(log[off+2])<<16|uint32(log[off+3])<<24)
	}
	require.Greater(t, len(ends), 10, "populate should have written many records")
	require.Equal(t, string(encoded(t, db)), string(states[len(states)-1]))
	for c := logHeaderLen; c <= len(log); c++ {
		got := NewDB(newClock(), nil)
		res, err := got.load(snap, log[:c]) // what readDB does once it has read the files
		require.NoError(t, err, "log cut at %d", c)
		i := 0
		for i+1 < len(ends) && ends[i+1] <= c {
			i++
		}
		require.Equal(t, string(states[i]), string(encoded(t, got)), "log cut at %d", c)
		require.Equal(t, c-ends[i], res.torn, "log cut at %d: the torn bytes dropped", c)
	}
	// and OpenDB says so, and goes on from there
	cut := filepath.Join(dir, "cut.json")
	require.NoError(t, os.WriteFile(cut, snap, 0o600))
	require.NoError(t, os.WriteFile(cut+".log", log[:len(log)-3], 0o600))
	var ev logEvents
	got, err := OpenDB(newClock(), &ev, cut)
	require.NoError(t, err)
	require.Len(t, ev, 1)
	assert.Equal(t, "WARN", ev[0].Level)
	assert.Contains(t, ev[0].Detail, "dropped a torn last record")
	got.CreateVM("api", "after", "User", nil)
	require.Equal(t, string(encoded(t, got)), string(onDisk(t, cut)))
}

// Damage that is not a torn end is refused: a bad record with more after it, a log that is not one,
// a log newer than its snapshot, a log without a snapshot.
func TestDamagedLogRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	db := populateOnDisk(t, path)
	db.Detach()
	snap, _ := os.ReadFile(path)
	log, _ := os.ReadFile(path + ".log")
	flip := slices.Clone(log)
	flip[logHeaderLen+10] ^= 0x20
	newer := slices.Clone(log)
	newer[len(logMagic)] += 5
	cases := []struct {
		name      string
		snap, log []byte
		want      string
	}{
		{"flipped byte mid-log", snap, flip, "record 1 at offset 16: checksum mismatch"},
		{"not a log", snap, []byte("hello, this is not a log at all"), "not a csconform commit log"},
		{"newer log", snap, newer, "generation 6 follows a snapshot of generation 1"},
		{"log without snapshot", nil, log, "a commit log without its snapshot"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.json")
			if c.snap != nil {
				require.NoError(t, os.WriteFile(p, c.snap, 0o600))
			}
			require.NoError(t, os.WriteFile(p+".log", c.log, 0o600))
			_, err := OpenDB(newClock(), nil, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), p)
		})
	}
}

// A kill between writing a new snapshot and its log leaves the old log beside it: ignored (the
// snapshot holds it). Compaction keeps the state; a write that failed is logged, the database is
// refused (Durable), and a commit once retryEvery has passed writes everything.
func TestSnapshotsAndFailedWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var ev logEvents
	db, err := OpenDB(newClock(), &ev, path)
	require.NoError(t, err)
	populate(t, db)
	old, _ := os.ReadFile(path + ".log")
	db.mu.Lock()
	require.NoError(t, db.snapshot())
	db.mu.Unlock()
	require.NoError(t, os.WriteFile(path+".log", old, 0o600)) // as if killed before the new log
	require.Equal(t, string(encoded(t, db)), string(onDisk(t, path)))
	db.mu.Lock()
	require.NoError(t, db.snapshot())
	db.mu.Unlock()

	// compaction: a log past its threshold becomes a snapshot at the next commit
	for i := 0; db.disk.gen < 5; i++ {
		db.disk.minCompact = 2048
		db.SetLastPinged("h1", time.Unix(int64(i), 0))
		require.Less(t, i, 100000)
	}
	require.Equal(t, string(encoded(t, db)), string(onDisk(t, path)))

	db.disk.log.Close() // the next append fails
	db.CreateVM("api", "lost-for-now", "User", nil)
	require.True(t, slices.ContainsFunc(ev, func(e history.Event) bool { return e.Level == "ERROR" }))
	require.NotEqual(t, string(encoded(t, db)), string(onDisk(t, path)))
	require.Error(t, db.Durable())
	db.disk.retryAt = time.Time{} // retryEvery later
	db.SetLastPinged("h1", time.Unix(1, 0))
	require.Equal(t, string(encoded(t, db)), string(onDisk(t, path)), "the commit after a failed one writes everything")
	require.NoError(t, db.Durable())
}
