package impl_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
)

// TestDeployRetriesOnlyWithoutANamedHost pins the retry of a failed start by the deploy and start
// APIs (issue 46 item 5).
//
// UserVmManagerImpl.startVirtualMachine(vmId, podId, clusterId, hostId, additionalParams, planner,
// isExplicitHost) (apache/cloudstack@00114e8b3f9640cd01512a70f5981cc7c343abaa,
// server/src/main/java/com/cloud/vm/UserVmManagerImpl.java; the DeployVMCmd and StartVMCmd paths
// both end there) sets deployOnGivenHost when a host id is given and
// allow.deploy.vm.if.deploy.on.given.host.fails is false (its default), then calls
// vmEntity.deploy(reservationId, …, deployOnGivenHost). VMEntityManagerImpl.deployVirtualMachine
// (d4m14ndx/cloudstack@0bd0bc22c42a5d34cb2d58670ea54d8f1af1531c, a main-branch copy past 4.22,
// engine/orchestration/src/main/java/org/apache/cloudstack/engine/cloud/entity/api/VMEntityManagerImpl.java)
// starts the VM on the reserved plan and, on any exception: with deployOnGivenHost, rethrows it (no
// retry; the older apache/cloudstack@04a2f419 copy swallowed it, before PR #5148); otherwise starts
// it once more with a zone-wide plan (DataCenterDeployment(0, …)) and the reserved plan's avoid set.
// Until this test the reference retried every failed start, on the named host when there was one.
//
// Here h1's first StartCommand after the network is up answers a failure (a simulator mock, count
// 1): orchestrateStart's next attempt finds h1 in its avoid set and the start fails. With h1 named
// the API fails; with no host named the retry's fresh plan finds h1 again, whose StartCommand now
// succeeds.
func TestDeployRetriesOnlyWithoutANamedHost(t *testing.T) {
	for _, c := range []struct {
		name   string
		deploy bool   // DeployVirtualMachine, else AllocateVirtualMachine + StartVirtualMachine
		host   string // the API's host id
		starts int    // orchestrateStart runs (VmWorkStart jobs)
		state  vm.State
	}{
		{"deploy on a named host: no retry", true, "h1", 1, vm.Error},
		{"deploy with no host: one retry", true, "", 2, vm.Running},
		{"start on a named host: no retry", false, "h1", 1, vm.Stopped},
		{"start with no host: one retry", false, "", 2, vm.Running},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newHAWorld(t, impl.Switches{}, "h1")
			w.deploy("web0", "", false) // implements n1: the router's StartCommand is behind us
			one := 1
			w.db.Mocks.Configure(impl.SimZone, impl.SimPod, impl.SimCluster, "h1", "StartCommand", "result:fail", &one, "")
			before := len(w.evs.events)

			var v *impl.VMVO
			var j *impl.JobVO
			if c.deploy {
				v, j = w.srv.DeployVirtualMachine("web1", []int64{w.net}, c.host)
			} else {
				v = w.srv.AllocateVirtualMachine("web1", []int64{w.net})
				j = w.srv.StartVirtualMachine(v.ID, c.host)
			}
			var err error
			done := false
			w.s.Go("client", func() { err = w.srv.WaitJob(j); done = true })
			w.runUntil(10*time.Minute, func() bool { return done })
			require.True(t, done)

			starts := 0
			for _, e := range w.evs.events[before:] {
				if e.Kind == history.Log && e.Object == impl.VMObject(v.ID) && e.Detail == "VM start attempt #1" {
					starts++
				}
			}
			assert.Equal(t, c.starts, starts, "orchestrateStart runs")
			assert.Equal(t, c.starts == 2, w.evs.logged(before, fmt.Sprintf("Start of VM %d failed, retrying once", v.ID)))
			assert.Equal(t, c.state, w.db.VM(v.ID).State)
			if c.state == vm.Running {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.True(t, strings.Contains(err.Error(), "Unable to create a deployment for web1"), "the first start's exception: %v", err)
			}
		})
	}
}
