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

// decode replaces the tables with a state file's.
func (db *DB) decode(b []byte) error {
	var f dbFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	if f.Version != dbFileVersion {
		return fmt.Errorf("version %d, this build reads version %d", f.Version, dbFileVersion)
	}
	db.nextID = f.NextID
	for _, v := range f.VMs {
		db.vms[v.ID] = v
	}
	for _, n := range f.Networks {
		db.networks[n.ID] = n
	}
	for _, n := range f.Nics {
		db.nics[n.ID] = n
	}
	for id, ips := range f.IPs {
		db.ips[id] = ips
	}
	for _, v := range f.Volumes {
		db.volumes[v.ID] = v
	}
	for _, h := range f.Hosts {
		db.hosts[h.ID] = h
	}
	for _, j := range f.Jobs {
		db.jobs[j.ID] = j
	}
	for _, l := range f.Locks {
		db.locks[l.Key] = l
	}
	return nil
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
