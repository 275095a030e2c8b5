package impl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fault makes the state files' writes fail as fail says (nil: they succeed) for the test, counting
// the writes it was asked about per file (the snapshot or the log).
type fault struct {
	fail   func(op, path string) error
	snaps  int // writes of a snapshot attempted
	errors int // writes and fsyncs failed
}

func injectFaults(t *testing.T) *fault {
	f := &fault{}
	StateWriteFault = func(op, path string) error {
		if op == "write" && !strings.HasSuffix(path, ".log") && !strings.HasSuffix(path, ".log.tmp") {
			f.snaps++
		}
		if f.fail == nil {
			return nil
		}
		err := f.fail(op, path)
		if err != nil {
			f.errors++
		}
		return err
	}
	t.Cleanup(func() { StateWriteFault = nil })
	return f
}

// A full disk (ENOSPC at the log's append): the write that met it and every later one is refused
// (Durable says why) rather than kept in memory as if written; a snapshot is tried again at most every
// retryEvery, not at every commit; and once the disk has room the next try writes the whole database,
// so what is on disk is again what the server holds. Before, the failure was an ERROR line, the write
// and all that followed were acknowledged from memory, and every commit rewrote the whole snapshot.
func TestFullDiskRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f := injectFaults(t)
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	populate(t, db)
	require.NoError(t, db.Durable())
	before := onDisk(t, path)

	f.fail = func(string, string) error { return syscall.ENOSPC }
	f.snaps = 0
	db.CreateNetwork("api", "full", false, 4)
	err = db.Durable()
	require.Error(t, err, "a write the disk did not take was not refused")
	assert.Contains(t, err.Error(), "the database cannot be written")
	assert.Contains(t, err.Error(), "no space left on device")
	for range 50 {
		db.CreateVM("api", "", "User", nil)
	}
	require.Error(t, db.Durable())
	assert.LessOrEqual(t, f.snaps, 1, "a snapshot was tried at most commits while the disk was full")
	assert.Equal(t, before, onDisk(t, path), "the files changed while the disk was full")

	f.fail = nil
	db.disk.retryAt = time.Time{} // a second later
	require.NoError(t, db.Durable(), "the disk has room again, the database is still refused")
	assert.Equal(t, encoded(t, db), onDisk(t, path))
	db.CreateVM("api", "after", "User", nil)
	require.NoError(t, db.Durable())
	assert.Equal(t, encoded(t, db), onDisk(t, path))
}

// A failed fsync (EIO) is a failed write too.
func TestFailedFsyncRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f := injectFaults(t)
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	f.fail = func(op, _ string) error {
		if op == "sync" {
			return syscall.EIO
		}
		return nil
	}
	db.CreateNetwork("api", "n", false, 4)
	err = db.Durable()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "input/output error")
}

// A snapshot that cannot be written (the disk full at compaction) loses no commit: each is in the
// log before its write returns, the log goes on taking them, and compaction is tried again once the
// log has grown as much again, not at every commit. Before, the commit that was due to compact wrote
// its rows only in the snapshot, so they and every later commit were lost.
func TestFailedSnapshotKeepsTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f := injectFaults(t)
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	db.disk.minCompact = 4 << 10
	populate(t, db)
	f.fail = func(op, p string) error {
		if p == path+".tmp" || p == path+".log.tmp" {
			return syscall.ENOSPC
		}
		return nil
	}
	f.snaps = 0
	for i := range 200 {
		db.CreateVM("api", "", "User", nil)
		require.NoError(t, db.Durable(), "commit %d refused: the log could take it", i)
		if i%20 == 0 {
			require.Equal(t, encoded(t, db), onDisk(t, path), "commit %d is not on disk", i)
		}
	}
	assert.Equal(t, encoded(t, db), onDisk(t, path))
	assert.Greater(t, f.snaps, 0, "compaction was never tried")
	assert.Less(t, f.snaps, 20, "compaction was tried at most commits")

	f.fail = nil
	for range 200 {
		db.CreateVM("api", "", "User", nil)
	}
	require.NoError(t, db.Durable())
	assert.Equal(t, encoded(t, db), onDisk(t, path))
	st, err := os.Stat(path + ".log")
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(64<<10), "the log was not compacted once the disk had room")
}

// A database that outgrows the snapshot's cap: commits go on in the log (the snapshot it cannot
// write is an ERROR line), and a server started on those files starts, on the snapshot and log it
// wrote, rather than refusing to start because the snapshot it writes at opening would be over the
// cap. When the log too is full, writes are refused.
func TestOverTheCapStartsOnItsOwnState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	oldSnap, oldLog := snapCap, logCap
	snapCap, logCap = 16<<10, 256<<10
	t.Cleanup(func() { snapCap, logCap = oldSnap, oldLog })
	db, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err)
	db.disk.minCompact = 1
	n := db.CreateNetwork("api", "n", false, 4)
	for range 60 { // about 24 KiB of snapshot
		db.CreateVM("api", "a-name-long-enough-to-fill-the-snapshot", "User", []int64{n.ID})
	}
	require.NoError(t, db.Durable(), "over the snapshot's cap, the log can still take the writes")
	want := encoded(t, db)
	assert.Greater(t, len(want), int(snapCap))
	assert.Equal(t, want, onDisk(t, path))

	again, err := OpenDB(newClock(), nil, path)
	require.NoError(t, err, "the server cannot start on the state it wrote")
	assert.Equal(t, want, encoded(t, again))
	again.CreateVM("api", "after-the-restart", "User", nil)
	require.NoError(t, again.Durable())
	assert.Equal(t, encoded(t, again), onDisk(t, path))

	// fill the log: the write that does not fit is refused, and what was acknowledged still loads
	var last []byte
	for range 2000 {
		again.CreateVM("api", "a-name-long-enough-to-fill-the-snapshot", "User", []int64{n.ID})
		if again.Durable() != nil {
			break
		}
		last = encoded(t, again)
	}
	err = again.Durable()
	require.Error(t, err, "the log grew past its cap")
	assert.Contains(t, err.Error(), "cap")
	assert.Equal(t, last, onDisk(t, path))
	_, err = OpenDB(newClock(), nil, path)
	require.NoError(t, err, "the server cannot start on the state it wrote")
}

// Detach (a stopping server) refuses what is still running: its writes no longer reach the file.
func TestDetachedIsNotDurable(t *testing.T) {
	db, err := OpenDB(newClock(), nil, filepath.Join(t.TempDir(), "state.json"))
	require.NoError(t, err)
	require.NoError(t, db.Durable())
	db.Detach()
	err = db.Durable()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrStopping))
	// a database in memory is never refused: the simulator has no state file
	mem := NewDB(newClock(), nil)
	mem.CreateVM("api", "", "User", nil)
	assert.NoError(t, mem.Durable())
}
