package impl_test

import (
	"slices"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
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

// TestDestroyWithExpungeIsOneTransaction pins VirtualMachineManagerImpl.destroy (bhouse-nexthop/
// cloudstack@d4da80c5, engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java):
// after advanceStop, one Transaction.execute does stateTransitTo(DestroyRequested) and, when expunge
// is set, stateTransitTo(ExpungeOperation), so nothing can see or write the VM Destroyed in between.
// UserVmManagerImpl.destroyVm(DestroyVMCmd) (bhouse-nexthop/cloudstack@017c41e8, server/src/main/
// java/com/cloud/vm/UserVmManagerImpl.java) then calls expunge(vm), whose advanceExpunge finds it
// Expunging. The reference wrote the volumes' Destroy state (and, with D2c off, asked the last host to
// stop the instance) between the two.
func TestDestroyWithExpungeIsOneTransaction(t *testing.T) {
	w := newHAWorld(t, impl.Switches{}, "h1")
	web := w.deploy("web1", "h1", false)
	j := w.srv.DestroyVirtualMachine(web.ID, true)
	done := false
	w.s.Go("client-destroy", func() { w.srv.WaitJob(j); done = true })
	w.runUntil(5*time.Minute, func() bool { return done })
	require.True(t, w.db.VM(web.ID).Removed, "expunged")
	obj := impl.VMObject(web.ID)
	evs := w.evs.events
	i := slices.IndexFunc(evs, func(e history.Event) bool {
		return e.Kind == history.State && e.Object == obj && e.To == string(vm.Destroyed)
	})
	require.GreaterOrEqual(t, i, 0, "DestroyRequested")
	require.Less(t, i+1, len(evs))
	next := evs[i+1]
	require.Equal(t, history.State, next.Kind, "the event after DestroyRequested: %+v", next)
	require.Equal(t, obj, next.Object)
	require.Equal(t, string(vm.Destroyed), next.From)
	require.Equal(t, string(vm.Expunging), next.To)
	require.Equal(t, evs[i].Actor, next.Actor)
}
