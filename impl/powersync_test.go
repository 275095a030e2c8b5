package impl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
	"github.com/stretchr/testify/require"
)

// TestLatePowerOnReportAfterStop pins C3, the race csconform explore found under the fixed profile
// (--seed 5): a bystander's crash makes h1's agent collect a report while web1 runs, the report
// reaches the server 8 s later, and web1 is stopped in between.
//
// CloudStack 4.22 (C3 on), as read in the Java:
//   - VirtualMachinePowerStateSyncImpl.processReport writes each reported VM's PowerOn through
//     VMInstanceDaoImpl.updatePowerState(…, wisdomEra = DateUtil.currentGMTTime()): the wisdom era is
//     the processing time, so a report collected before the stop still counts as newer than
//     everything (power_state_update_time is only compared with that era; the report's age is never
//     compared with the VM's update_time);
//   - VMInstanceDaoImpl.updatePowerState sees PowerOn with state Stopped as out of sync and writes it,
//     and VM_POWER_STATE is published;
//   - VirtualMachineManagerImpl.HandlePowerStateReport finds no pending work job (the stop's VmWorkStop
//     has finished; the StopVMCmd API job is no work job) and
//     handlePowerOnReportWithNoPendingJobsOnVM moves the Stopped VM to Running
//     (FollowAgentPowerOnReport, host_id := power_host) with no domain behind it.
//
// Fixed (C3 off): the report carries the agent's collection time; a power-on entry collected before
// the VM's last state change (update_time) is ignored, and web1 stays Stopped.
func TestLatePowerOnReportAfterStop(t *testing.T) {
	cases := []struct {
		name     string
		defects  impl.Switches
		want     vm.State
		wantHost string
		logged   bool
	}{
		{"cloudstack-4.22 (C3 on): the stop is undone", impl.Switches{impl.C3: true}, vm.Running, "h1", false},
		{"fixed (C3 off): the stale entry is ignored", impl.Switches{}, vm.Stopped, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newSimServer(t, 3, nil, c.defects) // ping.interval 60 s: no periodic report inside the window
			s, f, db, evs, srv := w.s, w.f, w.db, w.log, w.srv
			hv := sim.NewHost(s, "h1")
			w.agent(t, "h1", hv)

			n := srv.CreateNetwork("n1", true, 8)
			deploy := func(name string) *impl.VMVO {
				v, j := srv.DeployVirtualMachine(name, []int64{n.ID}, "h1")
				done := false
				s.Go("client-"+name, func() { srv.WaitJob(j); done = true })
				require.NoError(t, s.RunUntil(s.Now().Add(5*time.Minute), func() bool { return done }))
				require.Equal(t, vm.Running, db.VM(v.ID).State, "deploy %s", name)
				return db.VM(v.ID)
			}
			bystander, web1 := deploy("bystander"), deploy("web1")

			const staleness = 8 * time.Second
			f.DelayNextOutOfBand("h1", staleness)
			crashed := s.Now()
			require.NoError(t, hv.Crash(bystander.Name, "CRASHED")) // the report, collected now, lists web1
			j := srv.StopVirtualMachine(web1.ID, false)
			stopped := false
			s.Go("client-stop", func() { srv.WaitJob(j); stopped = true })
			require.NoError(t, s.RunUntil(s.Now().Add(time.Minute), func() bool { return stopped }))
			require.Equal(t, vm.Stopped, db.VM(web1.ID).State)
			require.Less(t, s.Now().Sub(crashed), staleness, "the stop ended after the report arrived: the test no longer exercises the race")

			// past the report, before the next periodic one
			require.NoError(t, s.RunUntil(crashed.Add(staleness+5*time.Second), nil))
			got := db.VM(web1.ID)
			require.Equal(t, c.want, got.State)
			require.Equal(t, c.wantHost, got.HostID)
			require.NotContains(t, hv.Running(), web1.Name, "web1's domain is gone either way")
			ignored := false
			for _, e := range evs.events {
				ignored = ignored || e.Kind == history.Log && strings.HasPrefix(e.Detail, "Ignoring the power-on report of VM "+web1.Name)
			}
			require.Equal(t, c.logged, ignored, "the ignored report is logged")
		})
	}
}
