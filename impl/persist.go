package impl

// The database on disk: CloudStack keeps its rows in MySQL, so they survive a management-server
// restart. A DB opened on a state file writes every committed write to it before the write's lock is
// released (the whole database, to a temporary file that is fsynced and renamed over the old one), so
// a process killed at any moment leaves every committed write on disk and nothing half-written.
// Scenario-scale databases are a few kilobytes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

const dbFileVersion = 1

// dbFile is the database as its state file holds it: every table in key order.
type dbFile struct {
	Version  int
	NextID   int64
	VMs      []*VMVO
	Networks []*NetworkVO
	Nics     []*NicVO
	IPs      map[int64][]*IPVO
	Volumes  []*VolumeVO
	Hosts    []*HostVO
	Jobs     []*JobVO
	Locks    []*LockVO
}

func table[K comparable, V any](m map[K]*V, keys []K) []*V {
	out := make([]*V, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// encode serializes the database; the caller holds mu.
func (db *DB) encode() ([]byte, error) {
	f := dbFile{Version: dbFileVersion, NextID: db.nextID, IPs: db.ips,
		VMs:      table(db.vms, slices.Sorted(maps.Keys(db.vms))),
		Networks: table(db.networks, slices.Sorted(maps.Keys(db.networks))),
		Nics:     table(db.nics, slices.Sorted(maps.Keys(db.nics))),
		Volumes:  table(db.volumes, slices.Sorted(maps.Keys(db.volumes))),
		Hosts:    table(db.hosts, slices.Sorted(maps.Keys(db.hosts))),
		Jobs:     table(db.jobs, slices.Sorted(maps.Keys(db.jobs))),
		Locks:    table(db.locks, slices.Sorted(maps.Keys(db.locks))),
	}
	return json.MarshalIndent(f, "", " ")
}

// decode replaces the tables with a state file's, and refuses a file the server could not run on
// (see check): a null row, an id out of range, a row pointing at one that does not exist.
func (db *DB) decode(b []byte) error {
	var f dbFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	if f.Version != dbFileVersion {
		return fmt.Errorf("version %d, this build reads version %d", f.Version, dbFileVersion)
	}
	db.nextID = f.NextID
	if err := putRows("VMs", db.vms, f.VMs, func(v *VMVO) int64 { return v.ID }); err != nil {
		return err
	}
	if err := putRows("Networks", db.networks, f.Networks, func(n *NetworkVO) int64 { return n.ID }); err != nil {
		return err
	}
	if err := putRows("Nics", db.nics, f.Nics, func(n *NicVO) int64 { return n.ID }); err != nil {
		return err
	}
	if err := putRows("Volumes", db.volumes, f.Volumes, func(v *VolumeVO) int64 { return v.ID }); err != nil {
		return err
	}
	if err := putRows("Jobs", db.jobs, f.Jobs, func(j *JobVO) int64 { return j.ID }); err != nil {
		return err
	}
	if err := putRows("Hosts", db.hosts, f.Hosts, func(h *HostVO) string { return h.ID }); err != nil {
		return err
	}
	if err := putRows("Locks", db.locks, f.Locks, func(l *LockVO) string { return l.Key }); err != nil {
		return err
	}
	for id, ips := range f.IPs {
		db.ips[id] = ips
	}
	return db.check()
}

// putRows adds a table's rows to m, refusing a null row, an empty or non-positive key and a key seen
// twice (the second row would silently replace the first).
func putRows[K int64 | string, V any](name string, m map[K]*V, rows []*V, key func(*V) K) error {
	for i, r := range rows {
		if r == nil {
			return fmt.Errorf("%s[%d] is null", name, i)
		}
		k := key(r)
		var zero K
		if k <= zero {
			return fmt.Errorf("%s[%d] has key %v: keys are positive ids or non-empty names", name, i, k)
		}
		if _, dup := m[k]; dup {
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

// OpenDB returns the database kept in the state file path: loaded from it when it exists, else empty,
// and from now on written to it at every commit. The file is written once here, so a path that cannot
// be written is an error now rather than a lost write later.
func OpenDB(env Env, sink history.Sink, path string) (*DB, error) {
	db := NewDB(env, sink)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("database %s: %w", path, err)
	default:
		if err := db.decode(b); err != nil {
			return nil, fmt.Errorf("database %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	db.path = path
	b, err = db.encode()
	if err == nil {
		err = writeDurably(path, b)
	}
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	db.written = b
	return db, nil
}

// Detach stops writing the state file: what a stopping server does first, so that nothing it does
// while it stops reaches the disk — a SIGTERM leaves the file as a kill at that moment would.
func (db *DB) Detach() {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.path = ""
}

// commit ends a write: with a state file, the database is written to it before the lock is released
// (unless the write changed nothing). A failed write is logged; the rows stay in memory and the next
// commit tries again.
func (db *DB) commit() {
	defer db.mu.Unlock()
	if db.path == "" {
		return
	}
	b, err := db.encode()
	if err == nil && bytes.Equal(b, db.written) {
		return
	}
	if err == nil {
		err = writeDurably(db.path, b)
	}
	if err != nil {
		db.emit(history.Event{Actor: "db", Kind: history.Log, Level: "ERROR", Detail: fmt.Sprintf("cannot write the database to %s: %v", db.path, err)})
		return
	}
	db.written = b
}

// writeDurably replaces path with b: a temporary file beside it, fsynced, renamed over it, and the
// directory fsynced, so the file is the old or the new content whatever moment the process dies.
func writeDurably(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
