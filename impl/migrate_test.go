package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// migrateWorld is web1 running on h1 with h2 beside it, the two sim hosts each other's peers.
func migrateWorld(t *testing.T) (*simServer, *impl.VMVO, map[string]*sim.Host) {
	t.Helper()
	w := newSimServer(t, 5, nil, impl.Switches{})
	hosts := map[string]*sim.Host{}
	for _, id := range []string{"h1", "h2"} {
		hv := sim.NewHost(w.s, id)
		hv.Peers = func(id string) *sim.Host { return hosts[id] }
		hosts[id] = hv
		w.agent(t, id, hv)
	}
	n := w.srv.CreateNetwork("n1", true, 4)
	v, j := w.srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	require.NoError(t, w.s.RunFor(2*time.Minute))
	require.NoError(t, w.srv.JobError(j.ID))
	require.Equal(t, vm.Running, w.db.VM(v.ID).State)
	return w, v, hosts
}

func running(h *sim.Host, name string) bool {
	for _, n := range h.Running() {
		if n == name {
			return true
		}
	}
	return false
}

// VirtualMachineManagerImpl.migrate(vm, srcHostId, dest) (apache/cloudstack main as stored, commit
// 3156c4ba, engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java):
// PrepareForMigrationCommand to the destination, vm.setLastHostId(srcHostId) and changeState(vm,
// MigrationRequested, dstHostId, work, Step.Migrating), MigrateCommand to vm.getLastHostId(), then
// changeState(vm, OperationSucceeded, dstHostId, work, Step.Started) and checkVmOnHost on the
// destination; the work row ends Done. The whole runs as a VmWorkMigrate job (migrateVmThroughJobQueue).
func TestMigrateMovesDomainAndRecord(t *testing.T) {
	w, v, hosts := migrateWorld(t)
	j := w.srv.MigrateVirtualMachine(v.ID, "h2")
	require.NoError(t, w.s.RunFor(time.Minute))
	require.NoError(t, w.srv.JobError(j.ID))
	got := w.db.VM(v.ID)
	assert.Equal(t, vm.Running, got.State)
	assert.Equal(t, "h2", got.HostID, "OperationSucceeded with dstHostId")
	assert.Equal(t, "h1", got.LastHostID, "vm.setLastHostId(srcHostId) before MigrationRequested")
	assert.True(t, running(hosts["h2"], v.Name), "the domain runs on the destination")
	assert.False(t, running(hosts["h1"], v.Name), "and no longer on the source")
	assert.True(t, w.log.has("Work-Job-Executor", "Migrating "+v.Name+" to h2"), "orchestrateMigrate runs in the VM's work job")
	assert.Nil(t, w.db.FindOutstandingItWork(v.ID, vm.Migrating), "the migration's op_it_work row ends Done")
}

// UserVmManagerImpl.migrateVirtualMachine / checkVmMigrationDestination (apache/cloudstack main as
// stored): only a Running VM, never to its own host ("VM is already present on this host").
func TestMigrateRefusals(t *testing.T) {
	w, v, _ := migrateWorld(t)
	for _, tc := range []struct {
		name, host, want string
	}{
		{"same host", "h1", "VM is already present on this host"},
		{"unknown host", "h9", "Unable to find the host"},
		{"no host", "", "Unable to find suitable destination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := w.srv.MigrateVirtualMachine(v.ID, tc.host)
			require.NoError(t, w.s.RunFor(10*time.Second))
			err := w.srv.JobError(j.ID)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, vm.Running, w.db.VM(v.ID).State)
			assert.Equal(t, "h1", w.db.VM(v.ID).HostID)
		})
	}
	stop := w.srv.StopVirtualMachine(v.ID, false)
	require.NoError(t, w.s.RunFor(time.Minute))
	require.NoError(t, w.srv.JobError(stop.ID))
	j := w.srv.MigrateVirtualMachine(v.ID, "h2")
	require.NoError(t, w.s.RunFor(10*time.Second))
	require.ErrorContains(t, w.srv.JobError(j.ID), "VM is not Running")
}

// VirtualMachineManagerImpl.migrate: a MigrateCommand that fails on the source (here its domain
// is gone: a crash the server has not seen yet) ends in the finally: a StopCommand to the destination
// and stateTransitTo(vm, OperationFailed, srcHostId): Migrating → Running on the source, last host kept.
func TestMigrateFailureReturnsToSource(t *testing.T) {
	w, v, hosts := migrateWorld(t)
	require.NoError(t, hosts["h1"].Crash(v.Name, "FAILED"))
	j := w.srv.MigrateVirtualMachine(v.ID, "h2")
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Minute), func() bool { return w.log.has("", "Migration was unsuccessful") }))
	require.True(t, w.log.has("Work-Job-Executor", "Migration was unsuccessful.  Cleaning up: "+v.Name))
	require.NoError(t, w.s.RunFor(5*time.Second))
	require.Error(t, w.srv.JobError(j.ID))
	assert.False(t, running(hosts["h2"], v.Name), "nothing runs on the destination")
}

// UserVmManagerImpl.recoverVirtualMachine (apache/cloudstack main as stored): only a Destroyed VM not
// removed; stateTransitTo(vm, RecoveryRequested, null) → Stopped; recoverRootVolume: a ROOT volume in
// Destroy is recovered (Ready). A Running VM is "not in the right state".
func TestRecoverDestroyedVM(t *testing.T) {
	w, v, _ := migrateWorld(t)
	j := w.srv.RecoverVirtualMachine(v.ID)
	require.NoError(t, w.s.RunFor(5*time.Second))
	require.ErrorContains(t, w.srv.JobError(j.ID), "is not in the right state")
	d := w.srv.DestroyVirtualMachine(v.ID, false)
	require.NoError(t, w.s.RunFor(time.Minute))
	require.NoError(t, w.srv.JobError(d.ID))
	require.Equal(t, vm.Destroyed, w.db.VM(v.ID).State)
	j = w.srv.RecoverVirtualMachine(v.ID)
	require.NoError(t, w.s.RunFor(5*time.Second))
	require.NoError(t, w.srv.JobError(j.ID))
	assert.Equal(t, vm.Stopped, w.db.VM(v.ID).State)
	for _, vol := range w.db.Volumes(v.ID) {
		assert.Equal(t, "Ready", vol.State)
	}
}

// A CheckVirtualMachineCommand to a live migration's destination during the memory copy finds the
// incoming domain: libvirt defines it there, paused, before the copy, and the KVM agent's answer is
// getVmState's — domainLookupByName, then s_powerStatesTable, where VIR_DOMAIN_PAUSED is PowerOn
// (apache/cloudstack@400e1ee7 plugins/hypervisors/kvm/src/main/java/com/cloud/hypervisor/kvm/resource/
// wrapper/LibvirtCheckVirtualMachineCommandWrapper.java execute; apache/cloudstack@e6b43860
// plugins/hypervisors/kvm/src/main/java/com/cloud/hypervisor/kvm/resource/LibvirtComputingResource.java
// getVmState, convertToPowerState). Until this test the simulator's destination had nothing until the
// copy ended, so HA's SimpleInvestigator, sent there by the restart a timed-out migration schedules
// (HighAvailabilityManagerImpl.restart: the item's host is the VO's, the destination, once
// MigrationRequested), found the VM dead, and HA's forced stop at the source, where the record had gone
// back, then released the NICs of the guest the copy resumed on the destination (explore --profile
// fixed --scheduler random --seed 759311211419962205: ip-conflict and orphan-domain).
func TestCheckVMOnMigrationDestinationFindsIncomingDomain(t *testing.T) {
	w, v, hosts := migrateWorld(t)
	j := w.srv.MigrateVirtualMachine(v.ID, "h2")
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Minute), func() bool { return hosts["h2"].Receiving(v.Name) }))
	require.True(t, hosts["h2"].Receiving(v.Name), "the copy began")
	require.False(t, running(hosts["h2"], v.Name), "the incoming domain runs nothing yet")
	var ans *impl.Message
	var err error
	done := false
	w.srv.SendForTest("HA-Worker-0", "h2", impl.Message{Kind: impl.MsgCheckVM, VMName: v.Name}, &ans, &err, &done)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(10*time.Second), func() bool { return done }))
	require.NoError(t, err)
	require.True(t, ans.Result)
	assert.Equal(t, vm.PowerOn, ans.Power, "the paused incoming domain is PowerOn")
	require.NoError(t, w.s.RunFor(time.Minute))
	require.NoError(t, w.srv.JobError(j.ID))
	assert.False(t, hosts["h2"].Receiving(v.Name), "the copy is over")
	assert.True(t, running(hosts["h2"], v.Name))
}
