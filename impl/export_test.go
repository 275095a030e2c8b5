package impl

import (
	"fmt"

	"github.com/csconform/csconform/model/host"
)

// Hooks for the external tests (package impl_test), compiled only with them.

// RunVmWorkForTest queues fn as a VmWork job of vmID on the server's VM work queue and waits for it, as
// startVmThroughJobQueue does, from a thread named name.
func (s *Server) RunVmWorkForTest(name, cmd string, vmID int64, fn func(t *Thread) error) {
	s.Go(name, func(t *Thread) { _ = s.jobs.runVmWork(t, cmd, vmID, fn) })
}

// PendingWorkJobsForTest is listPendingWorkJobs.
func (s *Server) PendingWorkJobsForTest(vmID int64) bool { return s.jobs.PendingWorkJobs(vmID) }

// ShutdownNetworkForTest runs shutdownNetwork in a server thread named name, as the network GC does.
func (s *Server) ShutdownNetworkForTest(name string, id int64, done *bool) {
	s.Go(name, func(t *Thread) { *done = s.shutdownNetwork(t, id) })
}

// GCShutdownForTest runs the network GC's shutdown of network id (shutdownNetworkIf with the GC's last
// look, stillFreeForGc) in a server thread named name; between runs once, right after a first look
// that found the network free, where a start's transition to Starting can land before the GC's write.
func (s *Server) GCShutdownForTest(name string, id int64, between func(), done *bool) {
	s.Go(name, func(t *Thread) {
		still, called := s.stillFreeForGc(t), false
		*done = s.shutdownNetworkIf(t, id, func(n *NetworkVO) bool {
			free := still(n)
			if free && !called && between != nil {
				called = true
				between()
			}
			return free
		})
	})
}

// TriggerUpdateForTest sends an out-of-band ping now, as LibvirtDomainListener does when any domain of
// the host shuts itself down.
func (a *Agent) TriggerUpdateForTest() { a.triggerUpdate() }

// SendForTest sends m to hostID from a server thread named name, as AgentManagerImpl.send, and
// leaves the answer and error in ans and err.
func (s *Server) SendForTest(name, hostID string, m Message, ans **Message, err *error, done *bool) {
	s.Go(name, func(t *Thread) { *ans, *err = s.agents.Send(t, hostID, m, 0); *done = true })
}

// SetInvestigateForTest replaces the investigation of a host whose agent went away
// (AgentManager.Investigate).
func (s *Server) SetInvestigateForTest(f func(hostID string) host.Status) { s.agents.Investigate = f }

// JoinVmWorkForTest is RunVmWorkForTest that leaves the caller's result in err and sets done when
// the caller's wait ends.
func (s *Server) JoinVmWorkForTest(name, cmd string, vmID int64, fn func(t *Thread) error, err *error, done *bool) {
	s.Go(name, func(t *Thread) { *err = s.jobs.runVmWork(t, cmd, vmID, fn); *done = true })
}

// ScheduleHaRestartForTest persists an HA restart item of the VM as it is now, on hostID, at step
// Investigating, and wakes the workers (what scheduleRestart does after its own checks). It returns
// the item's id.
func (s *Server) ScheduleHaRestartForTest(vmID int64, hostID string) int64 {
	v := s.DB.VM(vmID)
	w := s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: vmID, HostID: hostID, Step: haInvestigating, PrevState: v.State,
		PrevUpdate: v.UpdateCount, TimeToTry: s.Env.Now()})
	s.ha.wakeupWorkers()
	return w.ID
}

// ScheduleHaStartForTest persists an HA restart item at step Scheduled for a VM that is not running,
// on its last host, with its state and update count as they are now (what scheduleRestart(vm, false)
// leaves after its forced stop), and wakes the workers. It returns the item's id.
func (s *Server) ScheduleHaStartForTest(vmID int64) int64 {
	v := s.DB.VM(vmID)
	w := s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: vmID, HostID: v.LastHostID, Step: haScheduled, PrevState: v.State,
		PrevUpdate: v.UpdateCount, TimeToTry: s.Env.Now()})
	s.ha.wakeupWorkers()
	return w.ID
}

// HaWorkForTest returns the VM's op_ha_work rows as "type step tried".
func (db *DB) HaWorkForTest(vmID int64) []string {
	var out []string
	for _, w := range db.HaWorkOf(vmID) {
		out = append(out, fmt.Sprintf("%s %s %d", w.Type, w.Step, w.TimesTried))
	}
	return out
}

// JobError is the exception a job ended with (nil while running or on success).
func (s *Server) JobError(id int64) error { return s.jobs.JobError(id) }
