package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
)

// TestStartMarksEveryOwnedHostDisconnected pins the host reset of a starting management server.
//
// AgentManagerImpl.configure (apache/cloudstack@002a9ef8b16c318569ad8f88946aedd6d3ee6040,
// engine/orchestration/src/main/java/com/cloud/agent/manager/AgentManagerImpl.java) calls
// _hostDao.markHostsAsDisconnected(_nodeId, lastPing) with lastPing = now − the ping timeout
// (mgmtServiceConf.getTimeout()). HostDaoImpl.markHostsAsDisconnected
// (bhouse-nexthop/cloudstack@4fef2a7537b1b853269b644fb33c88c779cc0a06 — the 4.22 branch fork — and
// apache/cloudstack@04a2f419bceff605d0b62f4387f85ea3d6878450, the same code,
// engine/schema/src/main/java/com/cloud/host/dao/HostDaoImpl.java) runs two direct UPDATEs whose
// MsStatusSearch binds only "ms" (type and resourceState are left unset, so they drop out of the
// WHERE): every host the server owns, whatever its status, gets status Disconnected, last_ping
// lastPing and disconnected_on now, then mgmt_server_id NULL. A host another server owns, or none,
// is not touched. Until this test the reference moved only its Up hosts, through the state machine
// (ManagementServerDown), and kept itself as their owner.
//
// HostDaoImpl.updateState (same 4.22 fork commit) sets mgmt_server_id to NULL for a status that lost
// the connection (newStatus.updateManagementServer() && lostConnection()): a host that went Alert
// through the state machine has no owner left for the reset to match. Until this test the
// reference's HostTransit kept the owner.
func TestStartMarksEveryOwnedHostDisconnected(t *testing.T) {
	s := sim.NewScheduler(3)
	defer s.Close()
	db := impl.NewDB(s, nil)
	cfg, err := impl.NewConfig(map[string]string{"ping.interval": "10"})
	require.NoError(t, err)

	// the rows a previous incarnation of ms1 left, built through the state machine
	transit := func(id, owner string, evs ...host.Event) {
		for _, ev := range evs {
			_, ok := db.HostTransit("setup", id, ev, owner)
			require.True(t, ok, "%s: %s refused", id, ev)
		}
	}
	transit("up1", "ms1", host.AgentConnected, host.Ready)
	transit("connecting1", "ms1", host.AgentConnected)
	transit("up2", "ms2", host.AgentConnected, host.Ready)
	transit("alert1", "ms1", host.AgentConnected, host.Ready, host.PingTimeout)
	require.Equal(t, "", db.Host("alert1").MSID, "updateState: Alert lost the connection, so no owner")
	pingedBefore := db.Host("up2").LastPinged
	alertSince := db.Host("alert1").DisconnectedOn

	require.NoError(t, s.RunFor(time.Hour))
	f := sim.NewFabric(s)
	f.Listen(true)
	srv := impl.NewServer("ms1", s, db, cfg, impl.Switches{}, f)
	srv.Start()
	now := s.Now()

	for _, c := range []struct {
		host   string
		status host.Status
		owner  string
		reset  bool // last ping one ping timeout ago, disconnected now
	}{
		{"up1", host.Disconnected, "", true},
		{"connecting1", host.Disconnected, "", true}, // whatever its status
		{"up2", host.Up, "ms2", false},               // another server's
		{"alert1", host.Alert, "", false},            // nobody's
	} {
		h := db.Host(c.host)
		require.NotNil(t, h, c.host)
		assert.Equal(t, c.status, h.Status, "%s status", c.host)
		assert.Equal(t, c.owner, h.MSID, "%s owner", c.host)
		if c.reset {
			assert.Equal(t, now.Add(-cfg.PingTimeout()), h.LastPinged, "%s last ping", c.host)
			assert.Equal(t, now, h.DisconnectedOn, "%s disconnected on", c.host)
		}
	}
	assert.Equal(t, pingedBefore, db.Host("up2").LastPinged)
	assert.Equal(t, alertSince, db.Host("alert1").DisconnectedOn)
}
