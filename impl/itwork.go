package impl

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/csconform/csconform/model/vm"
)

// op_it_work: one row per start (changeToStartState), the step the start reached. It is how
// CloudStack knows, after the fact, whether a VM left Starting is still being worked on
// (checkWorkItems), what a forced stop must clean up (cleanup reads the step) and what a restarted
// server left half done (cancelWorkItems).

// ItWorkStep is ItWorkVO.Step (apache@1502b605 engine/schema ItWorkVO).
type ItWorkStep string

// ItWorkVO.Step values the reference reaches (Reconfiguring has no caller here; Migrating is in
// migrate.go).
const (
	ItWorkPrepare  ItWorkStep = "Prepare"
	ItWorkStarting ItWorkStep = "Starting"
	ItWorkStarted  ItWorkStep = "Started"
	ItWorkRelease  ItWorkStep = "Release"
	ItWorkDone     ItWorkStep = "Done"
)

// ItWorkVO is an op_it_work row. The Java keys it by a random UUID; here a sequence of its own, so
// that the ids of VMs, networks and jobs do not move.
type ItWorkVO struct {
	ID         int64
	MSID       string   // mgmt_server_id
	Type       vm.State // the operation: Starting or Migrating (Stopping rows are never created here)
	InstanceID int64
	Step       ItWorkStep
	CreatedAt  time.Time
	UpdatedAt  time.Time // every update sets it (ItWorkDaoImpl.update)
}

func (w *ItWorkVO) String() string {
	return fmt.Sprintf("ItWork[%d-%s-%d-%s]", w.ID, w.Type, w.InstanceID, w.Step)
}

// secondsInactive is getSecondsTaskIsInactive.
func (w *ItWorkVO) secondsInactive(now time.Time) time.Duration { return now.Sub(w.UpdatedAt) }

// The op_it_work writes are not scheduling points (no point()) and write no history: their readers
// (checkWorkItems, a forced stop, cancelWorkItems) run behind the VM's work queue or at start-up, so
// no interleaving at these writes can change what is read, and a history only moves where a reader's
// answer changes what the server does.

// PersistItWork inserts a row at step Prepare (the ItWorkVO constructor).
func (db *DB) PersistItWork(msid string, typ vm.State, vmID int64) *ItWorkVO {
	db.lock()
	defer db.commit()
	db.itWorkSeq++
	now := db.env.Now()
	w := &ItWorkVO{ID: db.itWorkSeq, MSID: msid, Type: typ, InstanceID: vmID, Step: ItWorkPrepare, CreatedAt: now, UpdatedAt: now}
	db.itWork[w.ID] = w
	db.ix.itWorkByVM[vmID] = insertID(db.ix.itWorkByVM[vmID], w.ID)
	db.touch(tItWork, w.ID)
	c := *w
	return &c
}

// ItWork returns a copy of a row (nil: none).
func (db *DB) ItWork(id int64) *ItWorkVO {
	db.lock()
	defer db.mu.Unlock()
	if w := db.itWork[id]; w != nil {
		c := *w
		return &c
	}
	return nil
}

// UpdateItWorkStep is ItWorkDaoImpl.updateStep: the step and updated_at.
func (db *DB) UpdateItWorkStep(id int64, step ItWorkStep) bool {
	db.lock()
	defer db.commit()
	w := db.itWork[id]
	if w == nil {
		return false
	}
	w.Step, w.UpdatedAt = step, db.env.Now()
	db.touch(tItWork, id)
	return true
}

// FindOutstandingItWork is ItWorkDaoImpl.findByOutstandingWork: a row of the VM for the operation
// whose step is not Done. findOneBy has no order (the Java's ids are random UUIDs); here the oldest.
func (db *DB) FindOutstandingItWork(vmID int64, typ vm.State) *ItWorkVO {
	db.lock()
	defer db.mu.Unlock()
	for _, id := range db.ix.itWorkByVM[vmID] {
		if w := db.itWork[id]; w.Type == typ && w.Step != ItWorkDone {
			c := *w
			return &c
		}
	}
	return nil
}

// ItWorkInProgressFor is ItWorkDaoImpl.listWorkInProgressFor: a server's rows not Done, in id order.
func (db *DB) ItWorkInProgressFor(msid string) []*ItWorkVO {
	db.lock()
	defer db.mu.Unlock()
	var out []*ItWorkVO
	for _, id := range slices.Sorted(maps.Keys(db.itWork)) {
		if w := db.itWork[id]; w.MSID == msid && w.Step != ItWorkDone {
			c := *w
			out = append(out, &c)
		}
	}
	return out
}

// cancelWorkItems hands what a previous incarnation of this server left half done to HA
// (VirtualMachineManagerImpl.cancelWorkItems from start(), source A): a start's row to
// scheduleRestart with investigation, each row then marked Done. It runs after cleanupLeftOverJobs, so
// the VM is as that clean-up left it (the order of the two managers' start() is Spring's and was not
// checked). The "vmmgr.cancel.workitem" lock is
// not taken: a server lists only its own rows. Stopping and Migrating rows are never created here.
//
// scheduleRestart of a VM with no host id (a start killed before the planner chose a host, or one
// cleanupLeftOverJobs moved to Stopped) first force-stops it through its work queue, and the Java's
// start() joins that VmWork job (advanceStop: stopVmThroughJobQueue, then the outcome). Here Start does
// not join it: the dispatcher (the heartbeat) is not running yet, and even once it is, each join takes
// a heartbeat and a poll (some 3 s a VM: two minutes for 40, an hour for 1,000) while the server does
// not serve. So from the first such row on, the rows are taken in order as the Java takes them up to
// the forced stop (the lines, the stop queued on the VM's queue, ahead of anything a client can queue
// once the server serves), and a server thread joins each stop and goes on (the HA item, the row
// Done), in the same order, while the server starts and serves. Rows before it, with nothing to join,
// are handled in Start as before.
func (s *Server) cancelWorkItems(t *Thread) {
	type begun struct {
		w    *ItWorkVO
		v    *VMVO
		stop *JobVO // the forced stop queued (nil: the VM had a host)
	}
	var later []begun
	for _, w := range s.DB.ItWorkInProgressFor(s.ID) {
		s.Log(t, "INFO", VMObject(w.InstanceID), "Handling unfinished work item: %s", w)
		v := s.DB.VM(w.InstanceID)
		if v == nil || w.Type != vm.Starting {
			continue
		}
		if mutated(MutHaRestartStopsWithoutItem) {
			s.submitStop(t, v.ID, forcedCleanup) // queued, as beginScheduleRestart's: no dispatcher yet to join it
			s.DB.UpdateItWorkStep(w.ID, ItWorkDone)
			continue
		}
		stop := s.ha.beginScheduleRestart(t, v)
		if stop == nil && later == nil {
			s.ha.finishScheduleRestart(t, v, true, "", nil)
			s.DB.UpdateItWorkStep(w.ID, ItWorkDone)
			continue
		}
		later = append(later, begun{w, v, stop})
	}
	if later == nil {
		return
	}
	s.Go("CancelWorkItems", func(t *Thread) {
		for _, b := range later {
			s.ha.finishScheduleRestart(t, b.v, true, "", b.stop)
			s.DB.UpdateItWorkStep(b.w.ID, ItWorkDone)
		}
	})
}
