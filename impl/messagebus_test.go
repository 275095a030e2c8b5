package impl_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
)

// stopHangingHost is a simulated host whose libvirt stop of one domain does not return for hang.
type stopHangingHost struct {
	*sim.Host
	s    *sim.Scheduler
	name string
	hang time.Duration
}

func (h *stopHangingHost) Stop(name string) error {
	if name == h.name {
		h.s.Sleep(h.hang)
	}
	return h.Host.Stop(name)
}

// TestPowerReportHandlersShareTheMessageBusGate pins the message bus's gate.
// VirtualMachinePowerStateSyncImpl.processReport (apache/cloudstack@0ded906d, engine/orchestration/
// src/main/java/com/cloud/vm/VirtualMachinePowerStateSyncImpl.java) publishes VM_POWER_STATE for each
// VM whose power state the report changed, the missing ones included, and MessageBusBase.publish
// (apache/cloudstack@6345cd54, framework/ipc/src/main/java/org/apache/cloudstack/framework/
// messagebus/MessageBusBase.java) runs the subscribers — VMMI's HandlePowerStateReport — inside
// _gate.enter(true) … _gate.leave(): one publish at a time per management server. Here web1's domain
// on h1 goes away and the handler of h1's report sends a StopCommand that h1's libvirt holds for 20
// minutes; web2's domain on h2 goes away at the same time, and h2's report handler waits at the
// gate until web1's stop returns. With the gate open to both, web2 would be handled within seconds.
func TestPowerReportHandlersShareTheMessageBusGate(t *testing.T) {
	w := newSimServer(t, 5, nil, impl.Switches{})
	h1 := &stopHangingHost{Host: sim.NewHost(w.s, "h1"), s: w.s, hang: 20 * time.Minute}
	h2 := sim.NewHost(w.s, "h2")
	w.agent(t, "h1", h1)
	w.agent(t, "h2", h2)
	n := w.srv.CreateNetwork("n1", false, 8)
	web1, _ := w.srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	web2, _ := w.srv.DeployVirtualMachine("web2", []int64{n.ID}, "h2")
	running := func() bool {
		return w.db.VM(web1.ID).State == vm.Running && w.db.VM(web2.ID).State == vm.Running
	}
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(10*time.Minute), running))
	require.True(t, running())
	require.NoError(t, w.s.RunFor(5*time.Minute)) // past the graceful period of the starts
	h1.name = w.db.VM(web1.ID).Name
	w.s.Go("virsh/h1", func() { _ = h1.Host.Stop(h1.name) }) // out of band: h1's agent reports at once
	name2 := w.db.VM(web2.ID).Name
	w.s.Go("virsh/h2", func() { _ = h2.Stop(name2) })
	handled := func(name string) func() bool {
		return func() bool {
			return w.log.has("", "VM "+name+" is at Running and we received a PowerReportMissing report")
		}
	}
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(5*time.Minute), handled(h1.name)))
	require.True(t, handled(h1.name)(), "h1's report handler did not run")
	require.NoError(t, w.s.RunFor(5*time.Minute))
	require.False(t, handled(w.db.VM(web2.ID).Name)(), "h2's report handler ran beside h1's: the gate is one per server")
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(30*time.Minute), handled(w.db.VM(web2.ID).Name)))
	at := func(detail string) time.Time {
		i := slices.IndexFunc(w.log.events, func(e history.Event) bool { return strings.Contains(e.Detail, detail) })
		require.GreaterOrEqual(t, i, 0, "no %q", detail)
		return w.log.events[i].Time
	}
	gap := at("VM " + w.db.VM(web2.ID).Name + " is at Running").Sub(at("VM " + h1.name + " is at Running"))
	require.Greater(t, gap, 19*time.Minute, "h2's handler waited for h1's StopCommand")
	require.NoError(t, w.s.RunFor(time.Minute)) // its StopCommand to h2
	require.Equal(t, vm.Stopped, w.db.VM(web2.ID).State)
}
