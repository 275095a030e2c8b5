package impl_test

import (
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/stretchr/testify/require"
)

// TestDisconnectJudgedOnTheRowReadBeforeTheInvestigation pins AgentManagerImpl.
// handleDisconnectWithInvestigation (apache/cloudstack@002a9ef8, engine/orchestration/src/main/java/
// com/cloud/agent/manager/AgentManagerImpl.java): the HostVO is read once, before investigate(attache),
// and currentStatus, getResourceState() and getLastPinged() are taken from that copy; the row is read
// again only after handleDisconnectWithoutInvestigation ("Maybe the host magically reappeared?").
// Here the host is put into PrepareForMaintenance while the investigation runs, which answers
// Disconnected: judged on the row as read before (Up, Enabled), the event is AgentDisconnected and
// the host goes Alert. Judged on a row read again (Up, PrepareForMaintenance) it would have waited
// for alert.wait and stayed Up.
func TestDisconnectJudgedOnTheRowReadBeforeTheInvestigation(t *testing.T) {
	w := newHAWorld(t, impl.Switches{}, "h1", "h2")
	investigated := false
	w.srv.SetInvestigateForTest(func(id string) host.Status {
		investigated = true
		w.db.SetHostResourceState(id, impl.ResourcePrepareForMaintenance)
		return host.Disconnected
	})
	w.agents["h1"].Kill()
	w.runUntil(time.Minute, func() bool { return w.status("h1") != host.Up })
	require.True(t, investigated)
	require.Equal(t, host.Alert, w.status("h1"))
	require.True(t, w.logged("ALERT: Host disconnected, h1"))
	require.False(t, w.logged("Host h1 has been determined to be disconnected but it hasn't passed the wait time yet."))
}
