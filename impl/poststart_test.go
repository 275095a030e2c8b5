package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/vm"
)

// moverLog is the world's event log that, when a VM's start completes (Starting -OperationSucceeded->
// Running), hands the VM to another task, which moves it on before the API job reads it again.
type moverLog struct {
	*eventLog
	onStarted func(e history.Event)
}

func (l *moverLog) Emit(e history.Event) {
	l.eventLog.Emit(e)
	if e.Kind == history.State && e.From == string(vm.Starting) && e.To == string(vm.Running) && l.onStarted != nil {
		l.onStarted(e)
	}
}

// TestOnlyTheDeployChecksTheStateItsStartLeft pins what the API jobs do when another operation moves
// the VM right after its start completed (apache/cloudstack@00114e8b, server/src/main/java/com/cloud/vm/
// UserVmManagerImpl.java):
//   - DeployVMCmd: the private startVirtualMachine(vmId, podId, clusterId, hostId, diskOfferingMap,
//     additionalParams, planner) reads the VM again and, unless it is Running, logs "VM ... unexpectedly
//     went to <state> state" and throws ConcurrentOperationException "Failed to deploy VM ..."; its
//     finally, updateVmStateForFailedVmCreation, takes a VM left Stopped to Error.
//   - StartVMCmd: startVirtualMachine(StartVMCmd) returns startVirtualMachine(...).first(), the VM read
//     before vmEntity.deploy; nothing reads its state after the start, so the job succeeds.
//   - the boot group / HA start (advanceStart once): no read after the start either.
func TestOnlyTheDeployChecksTheStateItsStartLeft(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmd     string // deploy, start or once
		ev      vm.Event
		to      vm.State
		wantErr string
		final   vm.State // "": not checked (power sync follows the running domain again afterwards)
	}{
		{"deploy, migrated", "deploy", vm.MigrationRequested, vm.Migrating, "ConcurrentOperationException: Failed to deploy VM", ""},
		{"deploy, powered off", "deploy", vm.FollowAgentPowerOffReport, vm.Stopped, "ConcurrentOperationException: Failed to deploy VM", vm.Error},
		{"start, migrated", "start", vm.MigrationRequested, vm.Migrating, "", ""},
		{"start, powered off", "start", vm.FollowAgentPowerOffReport, vm.Stopped, "", ""},
		{"boot group, migrated", "once", vm.MigrationRequested, vm.Migrating, "", ""},
		{"boot group, powered off", "once", vm.FollowAgentPowerOffReport, vm.Stopped, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &moverLog{eventLog: &eventLog{}}
			s := sim.NewScheduler(5)
			t.Cleanup(s.Close)
			f := sim.NewFabric(s)
			db := impl.NewDB(s, log)
			cfg, err := impl.NewConfig(nil)
			require.NoError(t, err)
			f.Listen(true)
			srv := impl.NewServer("ms1", s, db, cfg, impl.Switches{}, f)
			srv.Start()
			w := &simServer{s: s, f: f, db: db, log: log.eventLog, cfg: cfg, srv: srv}
			w.agent(t, "h1", sim.NewHost(s, "h1"))
			n := srv.CreateNetwork("n1", true, 4)

			var v *impl.VMVO
			moved := false
			log.onStarted = func(e history.Event) {
				if v == nil || e.Object != impl.VMObject(v.ID) || moved {
					return
				}
				moved = true
				s.Go("mover", func() {
					cur := db.VM(v.ID)
					host := cur.HostID
					if tc.to == vm.Stopped {
						host = ""
					}
					require.True(t, db.UpdateVMState("mover", cur, tc.ev, tc.to, host))
				})
			}
			var j *impl.JobVO
			switch tc.cmd {
			case "deploy":
				v, j = srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
			case "start":
				v = srv.AllocateVirtualMachine("web1", []int64{n.ID})
				j = srv.StartVirtualMachine(v.ID, "h1")
			case "once":
				v = srv.AllocateVirtualMachine("web1", []int64{n.ID})
				j = srv.StartVirtualMachineOnce(v.ID, "h1")
			}
			require.NoError(t, s.RunFor(2*time.Minute))
			require.True(t, moved, "the start never completed")
			err = srv.JobError(j.ID)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.False(t, log.has("API-Job-Executor", "unexpectedly went to"))
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.True(t, log.has("API-Job-Executor", v.Name+" unexpectedly went to "+string(tc.to)+" state"),
					"the deploy's line, as UserVmManagerImpl's logger.error")
			}
			if tc.final != "" {
				assert.Equal(t, tc.final, db.VM(v.ID).State)
			}
		})
	}
}
