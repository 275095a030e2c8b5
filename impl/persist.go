package impl

// The database on disk: CloudStack keeps its rows in MySQL, so they survive a management-server
// restart. A DB opened on a state file FILE keeps it as two files:
//
//   - FILE, a snapshot: every table as JSON, written whole to a temporary file that is fsynced and
//     renamed over the old one (so it is the old or the new snapshot whatever moment the process dies);
//   - FILE.log, the commit log: a header naming the snapshot it follows (its generation), then one
//     record per commit holding the rows that commit wrote (whole rows, deletions by key, NextID),
//     each framed by its length and CRC-32C.
//
// Every commit appends its record and fsyncs the log before the write's lock is released, so a
// process killed at any moment leaves every committed write on disk, and a commit costs what it
// changed, not the size of the database (the whole-file rewrite it replaces took most of a 30 s
// client timeout under 200 clients with a few hundred VMs). When the log outgrows the snapshot, a
// commit writes a new snapshot and starts a new log (cost amortised over the commits since the last
// one). Opening replays the log onto the snapshot and starts a new generation. A kill in the middle
// of an append leaves a torn last record: it is dropped (its write never returned, so nobody was told
// it happened) and said in a WARN line; a damaged record followed by more records is refused.
//
// A write the disk does not take (ENOSPC, EIO, a file over its cap) is never kept in memory as if
// written: the database says so (Durable) and the server refuses every request (530) until a whole
// snapshot is written, tried at most once a second. A snapshot that cannot be written at compaction
// loses nothing, since the log has every commit: the log goes on, and compaction is tried again once
// the log has grown as much again. A database past the snapshot's cap starts on its snapshot and log
// as they are, and refuses writes once the log is full.
//
// A hand-rolled log rather than an embedded store (bbolt, SQLite): the snapshot keeps the state file
// format (readable JSON, the same tables), rows are whole JSON values so a record is a few hundred
// bytes, and nothing new has to be fetched or cross-compiled for the containers.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// MaxStateFile caps the snapshot a state file holds, and MaxStateLog its commit log (which is
// compacted into a new snapshot at twice the snapshot's size): what the server reads is never more,
// and what it writes never more either, so it writes no file its next start would refuse. A VM with
// its NIC, volume, address and four jobs takes about 2 KB of snapshot, so 256 MiB holds well over
// 100,000 of them.
const (
	MaxStateFile = 256 << 20
	MaxStateLog  = 3 * MaxStateFile
)

// snapCap and logCap are the caps in force: MaxStateFile and MaxStateLog (tests make them small).
var snapCap, logCap int64 = MaxStateFile, MaxStateLog

// MaxCounter bounds the state file's counters: NextID (the id of the last row made), a generation,
// and the ids of the work tables. It is 2^53-1, the largest integer a JSON reader that uses doubles
// (jq, JavaScript) reads exactly, and far enough from 2^63-1 that no increment overflows (at 2^63-1
// the next network got a negative id and the CIDR 10.-36893488147419102.-58). A file past it is
// refused at load, and the server writes none: a write that would take a counter past it is refused
// with an ERROR line, and a network is not created (NewNetwork).
const MaxCounter = 1<<53 - 1

// dbFileVersion 2 added the commit log (Generation); version 1 files load as snapshots with no log.
const dbFileVersion = 2

// dbFile is the database as its state file holds it: every table in key order.
type dbFile struct {
	Version    int
	Generation int64 `json:",omitempty"` // the log that follows this snapshot (0: encode for comparison)
	NextID     int64
	VMs        []*VMVO
	Networks   []*NetworkVO
	Nics       []*NicVO
	IPs        map[int64][]*IPVO
	Volumes    []*VolumeVO
	Hosts      []*HostVO
	Jobs       []*JobVO
	Locks      []*LockVO
	ItWork     []*ItWorkVO `json:",omitempty"`
	HaWork     []*HaWorkVO `json:",omitempty"`
}

func table[K comparable, V any](m map[K]*V, keys []K) []*V {
	out := make([]*V, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// encode serializes the database's rows (for comparing two databases); the caller holds mu.
func (db *DB) encode() ([]byte, error) { return db.encodeFile(0) }

// encodeFile serializes the database as a snapshot of generation gen.
func (db *DB) encodeFile(gen int64) ([]byte, error) {
	f := dbFile{Version: dbFileVersion, Generation: gen, NextID: db.nextID, IPs: db.ips,
		VMs:      table(db.vms, slices.Sorted(maps.Keys(db.vms))),
		Networks: table(db.networks, slices.Sorted(maps.Keys(db.networks))),
		Nics:     table(db.nics, slices.Sorted(maps.Keys(db.nics))),
		Volumes:  table(db.volumes, slices.Sorted(maps.Keys(db.volumes))),
		Hosts:    table(db.hosts, slices.Sorted(maps.Keys(db.hosts))),
		Jobs:     table(db.jobs, slices.Sorted(maps.Keys(db.jobs))),
		Locks:    table(db.locks, slices.Sorted(maps.Keys(db.locks))),
		ItWork:   table(db.itWork, slices.Sorted(maps.Keys(db.itWork))),
		HaWork:   table(db.haWork, slices.Sorted(maps.Keys(db.haWork))),
	}
	return json.MarshalIndent(f, "", " ")
}

// decode fills the empty tables with a snapshot's and returns its generation. A null row, a
// non-positive or repeated key is refused here; what the rows say is checked once the log is replayed
// (check).
func (db *DB) decode(b []byte) (int64, error) {
	var f dbFile
	if err := json.Unmarshal(b, &f); err != nil {
		return 0, err
	}
	if f.Version != dbFileVersion && f.Version != 1 {
		return 0, fmt.Errorf("version %d, this build reads versions 1 and %d", f.Version, dbFileVersion)
	}
	if f.Generation < 0 || f.Generation >= MaxCounter {
		// opening writes the next generation
		return 0, fmt.Errorf("generation %d: not in 0..%d", f.Generation, int64(MaxCounter-1))
	}
	db.nextID = f.NextID
	if err := putRows("VMs", db.vms, f.VMs, func(v *VMVO) int64 { return v.ID }); err != nil {
		return 0, err
	}
	if err := putRows("Networks", db.networks, f.Networks, func(n *NetworkVO) int64 { return n.ID }); err != nil {
		return 0, err
	}
	if err := putRows("Nics", db.nics, f.Nics, func(n *NicVO) int64 { return n.ID }); err != nil {
		return 0, err
	}
	if err := putRows("Volumes", db.volumes, f.Volumes, func(v *VolumeVO) int64 { return v.ID }); err != nil {
		return 0, err
	}
	if err := putRows("Jobs", db.jobs, f.Jobs, func(j *JobVO) int64 { return j.ID }); err != nil {
		return 0, err
	}
	if err := putRows("Hosts", db.hosts, f.Hosts, func(h *HostVO) string { return h.ID }); err != nil {
		return 0, err
	}
	if err := putRows("Locks", db.locks, f.Locks, func(l *LockVO) string { return l.Key }); err != nil {
		return 0, err
	}
	if err := putRows("ItWork", db.itWork, f.ItWork, func(w *ItWorkVO) int64 { return w.ID }); err != nil {
		return 0, err
	}
	if err := putRows("HaWork", db.haWork, f.HaWork, func(w *HaWorkVO) int64 { return w.ID }); err != nil {
		return 0, err
	}
	for id, ips := range f.IPs {
		db.ips[id] = ips
	}
	return f.Generation, nil
}

// putRows adds a table's rows to m, refusing a null row, an empty or non-positive key and a key seen
// twice (the second row would silently replace the first).
func putRows[K int64 | string, V any](name string, m map[K]*V, rows []*V, key func(*V) K) error {
	return upsertRows(name, m, rows, key, false)
}

// upsertRows is putRows where a row may replace an earlier one with its key (a log record's rows).
func upsertRows[K int64 | string, V any](name string, m map[K]*V, rows []*V, key func(*V) K, replace bool) error {
	for i, r := range rows {
		if r == nil {
			return fmt.Errorf("%s[%d] is null", name, i)
		}
		k := key(r)
		var zero K
		if k <= zero {
			return fmt.Errorf("%s[%d] has key %v: keys are positive ids or non-empty names", name, i, k)
		}
		if _, dup := m[k]; dup && !replace {
			return fmt.Errorf("%s[%d]: a second row with key %v", name, i, k)
		}
		m[k] = r
	}
	return nil
}

// check refuses loaded tables the server could not run on: ids the next insert would reuse (NextID
// below an existing id silently replaces that row at the next deploy), states no state machine knows,
// and rows pointing at rows that do not exist where the server follows the pointer (a NIC's VM and
// network, a VM's networks, a network's router, a volume's VM, a pool's network, a job's VM or
// network). A pool address held by a NIC that is gone is kept: the reference tolerates it, and a
// defect can leave it so.
func (db *DB) check() error {
	// one sequence numbers the VMs, networks, NICs, volumes and jobs (DB.id)
	maxID := max(maxKey(db.vms), maxKey(db.networks), maxKey(db.nics), maxKey(db.volumes), maxKey(db.jobs))
	if db.nextID > MaxCounter {
		return fmt.Errorf("NextID %d is past the limit of %d (MaxCounter): the next id would not be one", db.nextID, int64(MaxCounter))
	}
	if w := max(maxKey(db.itWork), maxKey(db.haWork)); w > MaxCounter {
		return fmt.Errorf("a work row with id %d, past the limit of %d (MaxCounter): the next would not be one", w, int64(MaxCounter))
	}
	if db.nextID < maxID {
		return fmt.Errorf("NextID %d is below the highest id in use (%d): the next insert would replace a row", db.nextID, maxID)
	}
	for _, id := range slices.Sorted(maps.Keys(db.vms)) {
		v := db.vms[id]
		if !slices.Contains(vm.States(), v.State) {
			return fmt.Errorf("VM %d: unknown state %q", id, v.State)
		}
		if !slices.Contains(vm.PowerStates(), v.PowerState) {
			return fmt.Errorf("VM %d: unknown power state %q", id, v.PowerState)
		}
		for _, n := range v.NetworkIDs {
			if db.networks[n] == nil {
				return fmt.Errorf("VM %d is on network %d, which does not exist", id, n)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.networks)) {
		n := db.networks[id]
		if !slices.Contains(network.States(), n.State) {
			return fmt.Errorf("network %d: unknown state %q", id, n.State)
		}
		if n.RouterID != 0 && db.vms[n.RouterID] == nil {
			return fmt.Errorf("network %d has router %d, which does not exist", id, n.RouterID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.nics)) {
		n := db.nics[id]
		if db.vms[n.VMID] == nil {
			return fmt.Errorf("NIC %d belongs to VM %d, which does not exist", id, n.VMID)
		}
		if db.networks[n.NetworkID] == nil {
			return fmt.Errorf("NIC %d is on network %d, which does not exist", id, n.NetworkID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.ips)) {
		if db.networks[id] == nil {
			return fmt.Errorf("IPs: a pool for network %d, which does not exist", id)
		}
		for i, ip := range db.ips[id] {
			if ip == nil {
				return fmt.Errorf("IPs[%d][%d] is null", id, i)
			}
			if ip.NicID < 0 {
				return fmt.Errorf("IPs[%d][%d]: NIC id %d", id, i, ip.NicID)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.volumes)) {
		if v := db.volumes[id]; db.vms[v.VMID] == nil {
			return fmt.Errorf("volume %d belongs to VM %d, which does not exist", id, v.VMID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.hosts)) {
		// "" is a row HostTransit created whose first event the state machine refused
		if h := db.hosts[id]; h.Status != "" && !slices.Contains(host.Statuses(), h.Status) {
			return fmt.Errorf("host %s: unknown status %q", id, h.Status)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.jobs)) {
		j := db.jobs[id]
		if !slices.Contains(job.Statuses(), j.Status) {
			return fmt.Errorf("job %d: unknown status %q", id, j.Status)
		}
		switch {
		case j.InstanceType == "VirtualMachine" && db.vms[j.InstanceID] == nil:
			return fmt.Errorf("job %d is on VM %d, which does not exist", id, j.InstanceID)
		case j.InstanceType == "Network" && db.networks[j.InstanceID] == nil:
			return fmt.Errorf("job %d is on network %d, which does not exist", id, j.InstanceID)
		}
	}
	return nil
}

func maxKey[V any](m map[int64]V) int64 {
	var out int64
	for k := range m {
		out = max(out, k)
	}
	return out
}

// ---- the commit log

// logMagic starts a log; the generation of the snapshot it follows comes after it.
const logMagic = "csdblog1"

const logHeaderLen = len(logMagic) + 8

// dbRecord is one commit in the log: the rows it wrote, whole, and the keys it deleted.
type dbRecord struct {
	NextID       int64
	VMs          []*VMVO           `json:",omitempty"`
	Networks     []*NetworkVO      `json:",omitempty"`
	Nics         []*NicVO          `json:",omitempty"`
	IPs          map[int64][]*IPVO `json:",omitempty"`
	Volumes      []*VolumeVO       `json:",omitempty"`
	Hosts        []*HostVO         `json:",omitempty"`
	Jobs         []*JobVO          `json:",omitempty"`
	Locks        []*LockVO         `json:",omitempty"`
	DeletedNics  []int64           `json:",omitempty"`
	DeletedLocks []string          `json:",omitempty"`
	DeletedJobs  []int64           `json:",omitempty"`
	ItWork       []*ItWorkVO       `json:",omitempty"`
	HaWork       []*HaWorkVO       `json:",omitempty"`
}

// The tables a commit can touch (rowRef.table).
const (
	tVM byte = iota
	tNetwork
	tNic
	tIPs // a network's whole pool
	tVolume
	tHost
	tJob
	tLock
	tItWork
	tHaWork
)

// rowRef names a row a write touched: id for the tables keyed by id, key for hosts and locks.
type rowRef struct {
	table byte
	id    int64
	key   string
}

// disk is the persistence of a DB opened on a state file.
type disk struct {
	path     string
	gen      int64
	log      *os.File
	logSize  int64
	snapSize int64
	dirty    map[rowRef]struct{} // rows written since the last commit
	nextID   int64               // NextID as the disk has it
	// failed is the write that did not reach the disk (nil: the disk holds every commit): from then
	// on the database is ahead of its files, so every request is refused (Durable) until a whole
	// snapshot is written, tried at most every retryEvery (retryAt), not at every commit.
	failed      error
	retryAt     time.Time
	unwritable  atomic.Pointer[UnwritableError] // failed, for Durable without the lock
	compactFrom int64                           // a compaction failed: the log size at which it is tried again
	rewrite     bool                            // the old commit (the whole file at every commit), kept for the benchmark
	written     []byte                          // rewrite: what the file holds
	minCompact  int64                           // the least log size compacted (0: 1 MiB; tests make it small)
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// StateWriteFault, when set (by tests, here and of the server process), fails the state files' writes as a full or failing disk does: it
// is asked before each write ("write") and fsync ("sync") of path, and a write it fails writes
// half its bytes first (ENOSPC mid-record), so the failure paths run without a full disk.
var StateWriteFault func(op, path string) error

// writeFile writes b to f (path) through StateWriteFault.
func writeFile(f *os.File, path string, b []byte) error {
	if StateWriteFault != nil {
		if err := StateWriteFault("write", path); err != nil {
			f.Write(b[:len(b)/2])
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
	}
	_, err := f.Write(b)
	return err
}

// syncFile fsyncs f (path) through StateWriteFault.
func syncFile(f *os.File, path string) error {
	if StateWriteFault != nil {
		if err := StateWriteFault("sync", path); err != nil {
			return &fs.PathError{Op: "sync", Path: path, Err: err}
		}
	}
	return f.Sync()
}

// touch marks a row written by the current write (the caller holds mu); commit sends it to the log.
func (db *DB) touch(table byte, id int64) {
	if db.ix.watching {
		db.ix.changedSet[rowRef{table: table, id: id}] = struct{}{}
	}
	if db.disk != nil {
		db.disk.dirty[rowRef{table: table, id: id}] = struct{}{}
	}
}

func (db *DB) touchKey(table byte, key string) {
	if db.ix.watching {
		db.ix.changedSet[rowRef{table: table, key: key}] = struct{}{}
	}
	if db.disk != nil {
		db.disk.dirty[rowRef{table: table, key: key}] = struct{}{}
	}
}

// record gathers the touched rows as they are now, in key order.
func (db *DB) record() dbRecord {
	r := dbRecord{NextID: db.nextID}
	refs := slices.SortedFunc(maps.Keys(db.disk.dirty), func(a, b rowRef) int {
		return cmp.Or(cmp.Compare(a.table, b.table), cmp.Compare(a.id, b.id), cmp.Compare(a.key, b.key))
	})
	for _, ref := range refs {
		switch ref.table {
		case tVM:
			if v := db.vms[ref.id]; v != nil {
				r.VMs = append(r.VMs, v)
			}
		case tNetwork:
			if n := db.networks[ref.id]; n != nil {
				r.Networks = append(r.Networks, n)
			}
		case tNic:
			if n := db.nics[ref.id]; n != nil {
				r.Nics = append(r.Nics, n)
			} else {
				r.DeletedNics = append(r.DeletedNics, ref.id)
			}
		case tIPs:
			if r.IPs == nil {
				r.IPs = map[int64][]*IPVO{}
			}
			r.IPs[ref.id] = db.ips[ref.id]
		case tVolume:
			if v := db.volumes[ref.id]; v != nil {
				r.Volumes = append(r.Volumes, v)
			}
		case tHost:
			if h := db.hosts[ref.key]; h != nil {
				r.Hosts = append(r.Hosts, h)
			}
		case tJob:
			if j := db.jobs[ref.id]; j != nil {
				r.Jobs = append(r.Jobs, j)
			} else {
				r.DeletedJobs = append(r.DeletedJobs, ref.id)
			}
		case tLock:
			if l := db.locks[ref.key]; l != nil {
				r.Locks = append(r.Locks, l)
			} else {
				r.DeletedLocks = append(r.DeletedLocks, ref.key)
			}
		case tItWork:
			r.ItWork = append(r.ItWork, db.itWork[ref.id])
		case tHaWork:
			r.HaWork = append(r.HaWork, db.haWork[ref.id])
		}
	}
	return r
}

// apply replays a log record onto the tables.
func (db *DB) apply(r *dbRecord) error {
	db.nextID = r.NextID
	if err := upsertRows("VMs", db.vms, r.VMs, func(v *VMVO) int64 { return v.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("Networks", db.networks, r.Networks, func(n *NetworkVO) int64 { return n.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("Nics", db.nics, r.Nics, func(n *NicVO) int64 { return n.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("Volumes", db.volumes, r.Volumes, func(v *VolumeVO) int64 { return v.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("Jobs", db.jobs, r.Jobs, func(j *JobVO) int64 { return j.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("Hosts", db.hosts, r.Hosts, func(h *HostVO) string { return h.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("Locks", db.locks, r.Locks, func(l *LockVO) string { return l.Key }, true); err != nil {
		return err
	}
	if err := upsertRows("ItWork", db.itWork, r.ItWork, func(w *ItWorkVO) int64 { return w.ID }, true); err != nil {
		return err
	}
	if err := upsertRows("HaWork", db.haWork, r.HaWork, func(w *HaWorkVO) int64 { return w.ID }, true); err != nil {
		return err
	}
	for id, ips := range r.IPs {
		db.ips[id] = ips
	}
	for _, id := range r.DeletedNics {
		delete(db.nics, id)
	}
	for _, k := range r.DeletedLocks {
		delete(db.locks, k)
	}
	for _, id := range r.DeletedJobs {
		delete(db.jobs, id)
	}
	return nil
}

// frame wraps a record's payload: its length and CRC-32C, little-endian, then the payload.
func frame(payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(b, uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(payload, crcTable))
	return append(b, payload...)
}

func logHeader(gen int64) []byte {
	return binary.LittleEndian.AppendUint64([]byte(logMagic), uint64(gen))
}

// loadResult says what load found beyond the tables.
type loadResult struct {
	gen      int64 // the snapshot's generation
	records  int   // log records replayed
	staleLog bool  // the log followed an older snapshot (a kill between writing a snapshot and its log)
	torn     int   // bytes of a torn last record dropped (0: none)
	tornAt   int64 // where they started
}

// load fills an empty DB from a snapshot (nil: none) and a log (nil: none), and checks the result. It
// reads only; the errors name what is wrong, not the file (the caller knows which it gave).
func (db *DB) load(snap, log []byte) (res loadResult, err error) {
	if snap == nil && log != nil {
		return res, errors.New("a commit log without its snapshot")
	}
	if snap != nil {
		if res.gen, err = db.decode(snap); err != nil {
			return res, err
		}
	}
	if log != nil {
		if err := db.replay(log, &res); err != nil {
			return res, logError{err}
		}
	}
	db.reindex()
	return res, db.check()
}

// replay applies the log's records if it follows this snapshot. A record cut short at the end of the
// log (or a last record whose checksum fails, or a zero-filled tail) is a write the kill interrupted:
// dropped. A bad record with more after it is damage: refused.
func (db *DB) replay(log []byte, res *loadResult) error {
	if len(log) < logHeaderLen {
		if !bytes.HasPrefix([]byte(logMagic), log[:min(len(log), len(logMagic))]) {
			return errors.New("not a csconform commit log")
		}
		res.torn, res.tornAt = len(log), 0 // the header's own write was cut
		return nil
	}
	if string(log[:len(logMagic)]) != logMagic {
		return errors.New("not a csconform commit log")
	}
	gen := int64(binary.LittleEndian.Uint64(log[len(logMagic):]))
	switch {
	case gen < res.gen:
		res.staleLog = true // the snapshot already holds it
		return nil
	case gen > res.gen:
		return fmt.Errorf("generation %d follows a snapshot of generation %d: the snapshot is older than its log", gen, res.gen)
	}
	off := logHeaderLen
	for off < len(log) {
		rest := log[off:]
		torn := func() error { res.torn, res.tornAt = len(rest), int64(off); return nil }
		if len(rest) < 8 || !slices.ContainsFunc(rest, func(c byte) bool { return c != 0 }) {
			return torn()
		}
		n := int64(binary.LittleEndian.Uint32(rest))
		sum := binary.LittleEndian.Uint32(rest[4:])
		if n == 0 {
			return fmt.Errorf("record %d at offset %d: empty", res.records+1, off)
		}
		if 8+n > int64(len(rest)) {
			return torn()
		}
		payload := rest[8 : 8+n]
		if crc32.Checksum(payload, crcTable) != sum {
			if 8+n == int64(len(rest)) {
				return torn()
			}
			return fmt.Errorf("record %d at offset %d: checksum mismatch, with more records after it", res.records+1, off)
		}
		var r dbRecord
		if err := json.Unmarshal(payload, &r); err != nil {
			return fmt.Errorf("record %d at offset %d: %w", res.records+1, off, err)
		}
		if err := db.apply(&r); err != nil {
			return fmt.Errorf("record %d at offset %d: %w", res.records+1, off, err)
		}
		res.records++
		off += int(8 + n)
	}
	return nil
}

// logError is an error in the log (rather than in the snapshot).
type logError struct{ err error }

func (e logError) Error() string { return "log: " + e.err.Error() }

// readIfExists reads a file of at most max bytes; nil, nil when there is none. A longer one is an
// error, found from its size when it is a regular file, else after reading max+1 bytes (a device or
// a pipe).
func readIfExists(path string, max int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooBig := fmt.Errorf("longer than the cap of %d MiB a state file's %s may have", max>>20, what)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooBig
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// readDB loads the database kept in the state file path (and its log) without writing anything.
func readDB(env Env, sink history.Sink, path string) (*DB, loadResult, error) {
	db := NewDB(env, sink)
	snap, err := readIfExists(path, snapCap, "snapshot")
	if err != nil {
		return nil, loadResult{}, fmt.Errorf("database %s: %w", path, err)
	}
	log, err := readIfExists(path+".log", logCap, "log")
	if err != nil {
		return nil, loadResult{}, fmt.Errorf("database %s: %w", path+".log", err)
	}
	res, err := db.load(snap, log)
	var le logError
	switch {
	case errors.As(err, &le):
		return nil, res, fmt.Errorf("database %s: %w", path+".log", le.err)
	case err != nil:
		return nil, res, fmt.Errorf("database %s: %w", path, err)
	}
	return db, res, nil
}

// OpenDB returns the database kept in the state file path: loaded from it (and its log) when it
// exists, else empty, and from now on written at every commit. Opening writes a new snapshot and an
// empty log, so a path that cannot be written is an error now rather than a lost write later.
func OpenDB(env Env, sink history.Sink, path string) (*DB, error) {
	db, res, err := readDB(env, sink, path)
	if err != nil {
		return nil, err
	}
	if res.torn > 0 {
		db.emit(history.Event{Actor: "db", Kind: history.Log, Level: "WARN", Detail: fmt.Sprintf(
			"%s.log: dropped a torn last record (%d bytes at offset %d): the process died while writing it, before the write returned", path, res.torn, res.tornAt)})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	db.disk = &disk{path: path, gen: res.gen, dirty: map[rowRef]struct{}{}}
	err = db.snapshot()
	if errors.Is(err, errOverCap) {
		// the log grew on while no snapshot could be written: start on the files as they are, rather
		// than refuse the state this server wrote
		if err = db.continueLog(res); err == nil {
			db.emit(history.Event{Actor: "db", Kind: history.Log, Level: "WARN", Detail: fmt.Sprintf(
				"%s: the database is over the cap of %d MiB a snapshot may have: kept the snapshot and its log, which takes the commits until its own cap (%d MiB), then writes are refused", path, snapCap>>20, logCap>>20)})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return db, nil
}

// continueLog makes the opened database append to the log its files have (its torn last record cut
// off), or to a new empty log of the snapshot's generation if there is none that follows it.
func (db *DB) continueLog(res loadResult) error {
	d := db.disk
	st, err := os.Stat(d.path)
	if err != nil {
		return err
	}
	end := int64(-1) // where the log's valid records end (-1: no log to keep)
	if lst, err := os.Stat(d.path + ".log"); err == nil && !res.staleLog {
		end = lst.Size()
		if res.torn > 0 {
			end = res.tornAt
		}
		if end < int64(logHeaderLen) {
			end = -1
		}
	}
	if end < 0 {
		if err := writeDurably(d.path+".log", logHeader(d.gen)); err != nil {
			return err
		}
		end = int64(logHeaderLen)
	}
	f, err := os.OpenFile(d.path+".log", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(end); err != nil {
		f.Close()
		return err
	}
	if err := syncFile(f, d.path+".log"); err != nil {
		f.Close()
		return err
	}
	d.log, d.logSize, d.snapSize, d.nextID = f, end, st.Size(), db.nextID
	d.compactFrom = d.logSize + d.compactAt()
	return nil
}

// Detach stops writing the state file: what a stopping server does last, once it no longer answers
// anyone (process.Server.Shutdown), so that what its tasks do while they stop does not reach the disk
// (a SIGTERM leaves the file as a kill would) while every write it acknowledged did. From then on
// Durable refuses, so a request still running cannot be answered as if its write were kept. It does
// not wait for the lock (behind a queue of writers), so a commit already writing may still land, as it
// would before a kill.
func (db *DB) Detach() {
	db.detached.Store(true)
}

// ErrStopping is Durable's answer once the server is stopping (Detach).
var ErrStopping = errors.New("the database cannot be written: the management server is stopping")

// UnwritableError is Durable's answer when a write to the state file failed (ENOSPC, EIO, the cap).
type UnwritableError struct {
	Path string
	Err  error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("the database cannot be written (state file %s): %v", e.Path, e.Err)
}

func (e *UnwritableError) Unwrap() error { return e.Err }

// retryEvery is how often a database whose write failed tries to write itself whole again.
var retryEvery = time.Second

// Durable says whether what the database holds is on disk: nil with no state file, or when every
// commit reached it; else why not. A server answers a request with success only if Durable is nil
// before and after it (cloudapi, control): a write is acknowledged only once durable, and a server
// whose disk is full refuses rather than goes on in memory. While refusing, it tries again (at most
// every retryEvery) to write the whole database, so it takes writes again once the disk has room.
func (db *DB) Durable() error {
	if db == nil || db.disk == nil {
		return nil
	}
	d := db.disk
	if db.detached.Load() {
		return ErrStopping
	}
	if d.unwritable.Load() == nil {
		return nil
	}
	db.mu.Lock()
	if d.failed != nil && !time.Now().Before(d.retryAt) && !db.detached.Load() {
		db.retry()
	}
	db.mu.Unlock()
	if e := d.unwritable.Load(); e != nil {
		return e
	}
	return nil
}

// fail records a write that did not reach the disk; the caller holds mu.
func (db *DB) fail(err error) {
	d := db.disk
	if d.failed == nil {
		db.emit(history.Event{Actor: "db", Kind: history.Log, Level: "ERROR", Detail: fmt.Sprintf(
			"cannot write the database to %s: %v: requests are refused (530) until it can be written whole", d.path, err)})
	}
	d.failed, d.retryAt = err, time.Now().Add(retryEvery)
	d.unwritable.Store(&UnwritableError{Path: d.path, Err: err})
}

// retry writes the whole database of a failed disk; the caller holds mu.
func (db *DB) retry() {
	d := db.disk
	if err := db.snapshot(); err != nil {
		d.failed, d.retryAt = err, time.Now().Add(retryEvery)
		d.unwritable.Store(&UnwritableError{Path: d.path, Err: err})
		return
	}
	d.failed = nil
	d.unwritable.Store(nil)
	db.emit(history.Event{Actor: "db", Kind: history.Log, Level: "INFO", Detail: fmt.Sprintf(
		"the database is written to %s again: requests are taken", d.path)})
}

// snapshot writes the whole database as a new generation and starts its empty log; the caller holds
// mu (or owns db). Both are written beside their files and fsynced, then renamed: the snapshot's
// rename is the switch (a kill just after leaves the old log beside the new snapshot, and its
// generation says it is stale). An error before it leaves the old snapshot and log valid, the log
// still appended to; an error after it is a switchError: the old log no longer counts.
func (db *DB) snapshot() error {
	d := db.disk
	if err := db.countersWritable(); err != nil {
		return err
	}
	if d.gen >= MaxCounter {
		return fmt.Errorf("generation %d is at the limit of %d: no new snapshot", d.gen, int64(MaxCounter))
	}
	gen := d.gen + 1
	b, err := db.encodeFile(gen)
	if err != nil {
		return err
	}
	if int64(len(b)) > snapCap {
		// the next start would refuse it: the old snapshot and log stay
		return fmt.Errorf("a snapshot of %d bytes, over the cap of %d MiB a state file may have: not written (%w)", len(b), snapCap>>20, errOverCap)
	}
	if err := writeTemp(d.path+".tmp", b); err != nil {
		return err
	}
	if err := writeTemp(d.path+".log.tmp", logHeader(gen)); err != nil {
		os.Remove(d.path + ".tmp")
		return err
	}
	if err := os.Rename(d.path+".tmp", d.path); err != nil {
		os.Remove(d.path + ".tmp")
		os.Remove(d.path + ".log.tmp")
		return err
	}
	err = os.Rename(d.path+".log.tmp", d.path+".log")
	if err == nil {
		err = syncDir(d.path)
	}
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(d.path+".log", os.O_WRONLY|os.O_APPEND, 0)
	}
	if d.log != nil {
		d.log.Close()
		d.log = nil
	}
	d.gen = gen
	if err != nil {
		return switchError{err}
	}
	d.log, d.logSize, d.snapSize, d.nextID, d.compactFrom = f, int64(logHeaderLen), int64(len(b)), db.nextID, 0
	clear(d.dirty)
	return nil
}

// errOverCap is in the error of a snapshot over snapCap.
var errOverCap = errors.New("the database is over the cap")

// switchError is a snapshot that failed after replacing the old one: the old log is stale, so no
// commit may be appended to it.
type switchError struct{ error }

func (e switchError) Unwrap() error { return e.error }

// compactAt is the log size past which a commit writes a new snapshot: twice the snapshot, at least
// 1 MiB, so a snapshot costs at most half of what the commits since the last one appended.
func (d *disk) compactAt() int64 {
	least := d.minCompact
	if least == 0 {
		least = 1 << 20
	}
	return max(least, 2*d.snapSize, d.compactFrom)
}

// commit ends a write: with a state file, what the write changed is appended to the log and fsynced
// before the lock is released (nothing when it changed nothing), then the log is compacted if due. A
// failed append fails the database (fail): requests are refused until a whole snapshot is written. A
// failed compaction loses nothing (the log holds every commit): it is an ERROR line, and is tried
// again once the log has grown as much again.
func (db *DB) commit() {
	defer db.mu.Unlock()
	d := db.disk
	if d == nil {
		return
	}
	if db.detached.Load() {
		clear(d.dirty)
		return
	}
	if d.failed != nil {
		// the disk lacks what the database holds: only a whole snapshot brings them together
		if !time.Now().Before(d.retryAt) {
			db.retry()
		}
		return
	}
	var err error
	switch {
	case d.rewrite:
		err = db.rewriteWhole()
	case len(d.dirty) == 0 && db.nextID == d.nextID:
		return
	default:
		err = db.appendRecord()
	}
	if err != nil {
		db.fail(err)
		return
	}
	if !d.rewrite && d.logSize > d.compactAt() {
		if err := db.snapshot(); err != nil {
			var se switchError
			if errors.As(err, &se) {
				db.fail(err)
				return
			}
			d.compactFrom = d.logSize + d.compactAt()
			db.emit(history.Event{Actor: "db", Kind: history.Log, Level: "ERROR", Detail: fmt.Sprintf(
				"cannot compact the database's log %s.log into a new snapshot: %v: the log goes on taking the commits, compaction is tried again at %d bytes", d.path, err, d.compactFrom)})
		}
	}
}

// countersWritable refuses a write that would put a counter past MaxCounter on disk: the loader
// would refuse the file.
func (db *DB) countersWritable() error {
	if db.nextID > MaxCounter || db.itWorkSeq > MaxCounter || db.haWorkSeq > MaxCounter {
		return fmt.Errorf("the ids are past the limit of %d (MaxCounter; NextID %d): not written, the next start would refuse the file", int64(MaxCounter), db.nextID)
	}
	return nil
}

// appendRecord appends the touched rows to the log in one write and fsyncs it.
func (db *DB) appendRecord() error {
	d := db.disk
	if err := db.countersWritable(); err != nil {
		return err
	}
	r := db.record()
	payload, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b := frame(payload)
	if d.logSize+int64(len(b)) > logCap {
		// the log would be one the next start refuses: a new snapshot holds the record instead (if
		// that fails too, over the cap, the write is refused)
		return db.snapshot()
	}
	if err := writeFile(d.log, d.path+".log", b); err != nil {
		return err
	}
	if err := syncFile(d.log, d.path+".log"); err != nil {
		return err
	}
	d.logSize += int64(len(b))
	d.nextID = db.nextID
	clear(d.dirty)
	return nil
}

// rewriteWhole is the commit this log replaced: the whole database to the state file at every commit
// that changed it (what BenchmarkCommit compares against). It leaves the log as it is.
func (db *DB) rewriteWhole() error {
	d := db.disk
	clear(d.dirty)
	if err := db.countersWritable(); err != nil {
		return err
	}
	b, err := db.encodeFile(d.gen)
	if err != nil || bytes.Equal(b, d.written) {
		return err
	}
	if err := writeDurably(d.path, b); err != nil {
		return err
	}
	d.written = b
	return nil
}

// writeDurably replaces path with b: a temporary file beside it, fsynced, renamed over it, and the
// directory fsynced, so the file is the old or the new content whatever moment the process dies.
func writeDurably(path string, b []byte) error {
	if err := writeTemp(path+".tmp", b); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		os.Remove(path + ".tmp")
		return err
	}
	return syncDir(path)
}

// writeTemp writes b to tmp, fsynced; on error it leaves no file.
func writeTemp(tmp string, b []byte) error {
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = writeFile(f, tmp, b)
	if err == nil {
		err = syncFile(f, tmp)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// syncDir fsyncs the directory of path, so that a rename in it is durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
