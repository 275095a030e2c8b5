package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// TestPrepareStartsTheRouterOfAnImplementedNetwork pins how a user VM's start treats the router of a
// network that is already Implemented. NetworkOrchestrator.prepare (bhouse-nexthop/cloudstack@b58b6567,
// engine/orchestration/src/main/java/org/apache/cloudstack/engine/orchestration/
// NetworkOrchestrator.java) gets the network back at once from implementNetwork, then prepareNic
// reserves the NIC and, for each provider element, prepareElement → element.prepare.
// VirtualRouterElement.prepare (apache/cloudstack@0018999f, server/src/main/java/com/cloud/network/
// element/VirtualRouterElement.java; user VMs only) calls RouterDeploymentDefinition.deployVirtualRouter
// (apache/cloudstack@09505520, server/src/main/java/org/apache/cloudstack/network/router/deployment/
// RouterDeploymentDefinition.java: findOrDeployVirtualRouter finds the router, then
// nwHelper.startRouters), and NetworkHelperImpl.startRouters (apache/cloudstack@00f5a159,
// server/src/main/java/com/cloud/network/router/NetworkHelperImpl.java) starts every router that is
// not Running, unless its host is set and not Up. So a router whose domain went away while the network
// stayed Implemented (another VM keeps it in use) is started again by the next user VM's start; until
// this test the reference started routers only from implementNetwork, and web2 came up Running behind
// a Stopped router.
func TestPrepareStartsTheRouterOfAnImplementedNetwork(t *testing.T) {
	for _, c := range []struct {
		name       string
		stopRouter bool
		vms        []string // deployed at once
	}{
		{"router Stopped: the user VM's prepare starts it", true, []string{"web2"}},
		{"router Running: left alone", false, []string{"web2"}},
		// the second start's changeToStartState finds the router Starting and waits on the first's
		// start (checkWorkItems), then finds it Running: both VMs start, the router once
		{"router Stopped, two user VMs at once: one starts it, the other waits", true, []string{"web2", "web3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newSimServer(t, 5, nil, impl.Switches{})
			s, db := w.s, w.db
			h1 := sim.NewHost(s, "h1")
			w.agent(t, "h1", h1)
			n := w.srv.CreateNetwork("net1", false, 4)
			done := func(j *impl.JobVO) func() bool { return func() bool { return db.Job(j.ID).Status.Done() } }
			web1, j := w.srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
			require.NoError(t, s.RunUntil(s.Now().Add(5*time.Minute), done(j)))
			require.Equal(t, vm.Running, db.VM(web1.ID).State)
			r := db.VM(db.Network(n.ID).RouterID)
			require.Equal(t, vm.Running, r.State)

			if c.stopRouter {
				// the router's domain shuts down on its own; power sync follows it to Stopped
				require.NoError(t, h1.GuestShutdown(r.Name))
				require.NoError(t, s.RunUntil(s.Now().Add(10*time.Minute), func() bool { return db.VM(r.ID).State == vm.Stopped }))
				require.Equal(t, vm.Stopped, db.VM(r.ID).State)
			}
			require.Equal(t, network.Implemented, db.Network(n.ID).State, "web1 keeps net1 Implemented")
			startsBefore := routerStarts(w.log, r.ID)

			var vms []*impl.VMVO
			var jobs []*impl.JobVO
			for _, name := range c.vms {
				v, j := w.srv.DeployVirtualMachine(name, []int64{n.ID}, "h1")
				vms, jobs = append(vms, v), append(jobs, j)
			}
			require.NoError(t, s.RunUntil(s.Now().Add(15*time.Minute), func() bool {
				for _, j := range jobs {
					if !done(j)() {
						return false
					}
				}
				return true
			}))
			for _, v := range vms {
				require.Equal(t, vm.Running, db.VM(v.ID).State, v.Name)
			}
			require.Equal(t, vm.Running, db.VM(r.ID).State, "the network's router runs after a user VM started into it")
			require.Contains(t, h1.Running(), r.Name)
			if len(c.vms) > 1 {
				require.True(t, w.log.has("Work-Job-Executor", "Waiting some more to make sure there's no activity on "+r.Name),
					"the second start waited on the first's router start")
			}
			if c.stopRouter {
				require.Equal(t, startsBefore+1, routerStarts(w.log, r.ID), "web2's prepare started the router once")
			} else {
				require.Equal(t, startsBefore, routerStarts(w.log, r.ID), "a Running router is not started again")
			}
		})
	}
}

// routerStarts counts the router's Stopped → Starting transitions in the history.
func routerStarts(l *eventLog, id int64) int {
	obj := impl.VMObject(id)
	n := 0
	for _, e := range l.events {
		if e.Kind == history.State && e.Object == obj && e.To == string(vm.Starting) && e.From == string(vm.Stopped) {
			n++
		}
	}
	return n
}
