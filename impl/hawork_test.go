package impl

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// haWorkRows returns copies of every op_ha_work row in id order.
func (db *DB) haWorkRows() []*HaWorkVO {
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.haWork, slices.Sorted(maps.Keys(db.haWork)), nil)
}

// op_ha_work as HighAvailabilityDaoImpl keeps it (apache/cloudstack, HighAvailabilityDaoImpl: take,
// releaseWorkItems, hasBeenScheduled, listRunningHaWorkForVm): take hands the row due first (lowest
// time_to_try) that no server took and that is neither Done nor Cancelled to the caller, setting
// server_id and taken; releaseWorkItems(msid) clears both on the unfinished rows that server took.
func TestHaWorkQueueAsTheDAOKeepsIt(t *testing.T) {
	db := NewDB(clockEnv{}, nil)
	now := clockEnv{}.Now()
	later := db.PersistHaWork(HaWorkVO{Type: haRestart, VMID: 1, Step: haScheduled, TimeToTry: now.Add(time.Minute)})
	second := db.PersistHaWork(HaWorkVO{Type: haRestart, VMID: 2, Step: haInvestigating, TimeToTry: now.Add(-time.Second)})
	first := db.PersistHaWork(HaWorkVO{Type: haCheckStop, VMID: 3, Step: haScheduled, TimeToTry: now.Add(-time.Minute)})
	db.PersistHaWork(HaWorkVO{Type: haRestart, VMID: 4, Step: haDone, TimeToTry: now.Add(-time.Hour)})
	db.PersistHaWork(HaWorkVO{Type: haRestart, VMID: 5, Step: haCancelled, TimeToTry: now.Add(-time.Hour)})

	w := db.TakeHaWork("ms1")
	require.NotNil(t, w)
	assert.Equal(t, first.ID, w.ID, "the earliest time_to_try first")
	assert.Equal(t, "ms1", w.ServerID)
	assert.True(t, w.running())
	w = db.TakeHaWork("ms2")
	require.NotNil(t, w)
	assert.Equal(t, second.ID, w.ID, "a row taken is not taken again, by any server")
	assert.Nil(t, db.TakeHaWork("ms1"), "not due yet, or finished")
	assert.True(t, db.HasOpenHaWork(), "the row due in a minute")

	assert.Equal(t, 1, db.ReleaseHaWorkItems("ms2"), "only the rows ms2 took")
	w = db.TakeHaWork("ms1")
	require.NotNil(t, w)
	assert.Equal(t, second.ID, w.ID, "released, it is taken again")
	assert.Equal(t, 2, db.ReleaseHaWorkItems("ms1"))
	assert.Zero(t, db.ReleaseHaWorkItems("ms1"))
	assert.Empty(t, db.HaWorkOf(later.VMID)[0].ServerID, "never due, never taken")
}

// An HA item outlives the server that took it. HighAvailabilityManagerImpl.configure runs
// _haDao.releaseWorkItems(_serverId) (a restarted server hands back what its previous incarnation had
// taken) and onManagementNodeLeft releaseWorkItems(node.getMsid()) for each server that left; the
// workers (ha.workers, 5) then take the rows again. Before op_ha_work the queue was each server's
// memory, and an item in progress when its server died was lost.
func TestHaWorkOutlivesTheServerThatTookIt(t *testing.T) {
	for _, c := range []struct {
		name  string
		taker string
		run   func(s *Server)
	}{
		{"the server restarts", "ms1", func(s *Server) { s.Start() }},
		{"a peer sees it leave", "ms2", func(s *Server) {
			(&clusterManager{s: s}).onManagementNodeLeft(&Thread{Name: "Cluster-Notification-1"}, &MSHostVO{ID: 2, MSID: "ms2"})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, id := stallWorld(t, host.Up, vm.Running, vm.PowerOn, time.Minute, false)
			started := s.Env.(taskEnv).started
			s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: id, HostID: "h1", Step: haInvestigating, PrevState: vm.Running})
			require.NotNil(t, s.DB.TakeHaWork(c.taker))
			c.run(s)
			rows := s.DB.HaWorkOf(id)
			require.Len(t, rows, 1)
			assert.Empty(t, rows[0].ServerID, "released")
			assert.False(t, rows[0].running())
			assert.Subset(t, *started, []string{"ms/HA-Worker-0", "ms/HA-Worker-4"}, "the workers start to take it")
		})
	}
}
