package impl

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/csconform/csconform/model/vm"
)

// op_ha_work: the HA work queue, one row per restart (HA) or stop check (CheckStop), shared by every
// management server on the database (HighAvailabilityDaoImpl, read in apache/cloudstack; spec 8).
// A worker of any server takes the first row due (take: server_id and taken set); processing ends
// with the row Done, Cancelled or handed back (rescheduleWork: server_id and taken cleared). A
// server releases the rows it had taken when it starts (configure) and when a peer sees it leave
// (onManagementNodeLeft), so an HA item outlives the server that scheduled or took it.

// HaWorkVO is an op_ha_work row. Its id sequence is its own, so the other tables' ids do not move.
type HaWorkVO struct {
	ID         int64
	Type       haWorkType
	VMID       int64 // instance_id
	HostID     string
	Step       haStep
	PrevState  vm.State
	PrevUpdate int64 // vm_instance.updated (the update count) when scheduled
	TimesTried int
	TimeToTry  time.Time
	ServerID   string    // the msid of the server that took it ("": untaken)
	DateTaken  time.Time // when it was taken (zero: never, or handed back)
	Reason     string
	Created    time.Time
}

func (w *HaWorkVO) String() string {
	return fmt.Sprintf("HAWork[%d-%s-%d-%s-%s]", w.ID, w.Type, w.VMID, w.PrevState, w.Step)
}

// finished: Done or Cancelled (the steps every DAO search leaves out).
func (w *HaWorkVO) finished() bool {
	return w.Step == haDone || (w.Step == haCancelled && !mutated(MutHaCancelledNotFinished))
}

// running says a worker holds it (listRunningHaWorkForVm: taken and not finished).
func (w *HaWorkVO) running() bool { return !w.DateTaken.IsZero() && !w.finished() }

// pending says whether the row is of that type and not finished (listPendingHaWorkForVm, on a VM's rows).
func (w *HaWorkVO) pending(typ haWorkType) bool { return w.Type == typ && !w.finished() }

// Like op_it_work's, these writes are not scheduling points and write no history: the HA manager's
// log lines say what its items do.

// PersistHaWork inserts w with the next id and returns that copy.
func (db *DB) PersistHaWork(w HaWorkVO) *HaWorkVO {
	db.lock()
	defer db.commit()
	db.haWorkSeq++
	w.ID, w.Created = db.haWorkSeq, db.env.Now()
	db.haWork[w.ID] = &w
	db.ix.haWorkByVM[w.VMID] = insertID(db.ix.haWorkByVM[w.VMID], w.ID)
	db.touch(tHaWork, w.ID)
	c := w
	return &c
}

// UpdateHaWork writes a row back whole (HighAvailabilityDaoImpl.update(id, work)).
func (db *DB) UpdateHaWork(w *HaWorkVO) bool {
	db.lock()
	defer db.commit()
	if db.haWork[w.ID] == nil {
		return false
	}
	c := *w
	db.haWork[w.ID] = &c
	db.touch(tHaWork, w.ID)
	return true
}

// HaWorkRows returns copies of a VM's op_ha_work rows in id order, for the checker: it takes the
// lock without asking the time (no scheduling point, and the checker is no task of a process). The
// checker applies its own reading of hasPendingHaWork to them (detect.HaRestartHolds), so that a
// regression of the reference's predicates does not move the detector's bound with it.
func (db *DB) HaWorkRows(vmID int64) []HaWorkVO {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make([]HaWorkVO, 0, len(db.ix.haWorkByVM[vmID]))
	for _, id := range db.ix.haWorkByVM[vmID] {
		if w := db.haWork[id]; w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// HaWorkOf returns copies of a VM's rows in id order.
func (db *DB) HaWorkOf(vmID int64) []*HaWorkVO {
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.haWork, db.ix.haWorkByVM[vmID], nil)
}

// TakeHaWork is HighAvailabilityDaoImpl.take: the first row (lowest time_to_try, then id) that is
// untaken, due and not finished is taken by msid.
func (db *DB) TakeHaWork(msid string) *HaWorkVO {
	db.lock()
	defer db.commit()
	now := db.env.Now()
	var best *HaWorkVO
	for _, w := range db.haWork {
		if w.ServerID != "" || !w.DateTaken.IsZero() || w.TimeToTry.After(now) || w.finished() {
			continue
		}
		if best == nil || w.TimeToTry.Before(best.TimeToTry) || (w.TimeToTry.Equal(best.TimeToTry) && w.ID < best.ID) {
			best = w
		}
	}
	if best == nil {
		return nil
	}
	best.ServerID, best.DateTaken = msid, now
	db.touch(tHaWork, best.ID)
	c := *best
	return &c
}

// ReleaseHaWorkItems is HighAvailabilityDaoImpl.releaseWorkItems: the unfinished rows msid had taken
// are untaken. It returns how many.
func (db *DB) ReleaseHaWorkItems(msid string) int {
	db.lock()
	defer db.commit()
	n := 0
	for _, id := range slices.Sorted(maps.Keys(db.haWork)) {
		if w := db.haWork[id]; w.ServerID == msid && !w.DateTaken.IsZero() && !w.finished() {
			w.ServerID, w.DateTaken = "", time.Time{}
			db.touch(tHaWork, id)
			n++
		}
	}
	return n
}

// HasOpenHaWork says whether some row is untaken and not finished (a worker has something to take,
// now or later).
func (db *DB) HasOpenHaWork() bool {
	db.lock()
	defer db.mu.Unlock()
	for _, w := range db.haWork {
		if w.DateTaken.IsZero() && !w.finished() {
			return true
		}
	}
	return false
}

// PendingHaWorkForHost is HighAvailabilityDaoImpl.listPendingHAWorkForHost as its caller uses it: the
// restart rows of the host not Done or Cancelled, in id order (the DAO's search was not read; its
// name and its caller's use say type HA, the host, pending).
func (db *DB) PendingHaWorkForHost(hostID string) []*HaWorkVO {
	db.lock()
	defer db.mu.Unlock()
	var out []*HaWorkVO
	for _, id := range slices.Sorted(maps.Keys(db.haWork)) {
		if w := db.haWork[id]; w.HostID == hostID && w.pending(haRestart) {
			c := *w
			out = append(out, &c)
		}
	}
	return out
}

// MarkPendingHaWorksAsInvestigating is HighAvailabilityDaoImpl.markPendingWorksAsInvestigating: every
// row take would hand out now (untaken, due, not Done or Cancelled: TBASearch) goes to step
// Investigating, whatever its type. It returns how many.
func (db *DB) MarkPendingHaWorksAsInvestigating() int {
	db.lock()
	defer db.commit()
	now := db.env.Now()
	n := 0
	for _, id := range slices.Sorted(maps.Keys(db.haWork)) {
		w := db.haWork[id]
		if w.ServerID != "" || !w.DateTaken.IsZero() || w.TimeToTry.After(now) || w.finished() || w.Step == haInvestigating {
			continue
		}
		w.Step = haInvestigating
		db.touch(tHaWork, id)
		n++
	}
	return n
}
