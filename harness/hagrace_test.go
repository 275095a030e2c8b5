package harness

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/invariant"
)

// A VM without HA can be HA's too: a restarted server's cancelWorkItems hands an unfinished start's
// VM to HighAvailabilityManagerImpl.scheduleRestart(vm, true), which persists an HA item with
// investigation whatever the offering (apache/cloudstack@04913a45
// server/src/main/java/com/cloud/ha/HighAvailabilityManagerImpl.java scheduleRestart); when fencing
// fails restart() returns now + restart.retry.interval, and until the item is tried again
// VirtualMachineManagerImpl.handlePowerStateReport postpones every report of the VM
// (hasPendingHaWork; HighAvailabilityDaoImpl.listPendingHaWorkForVm: type HA, step not
// Done/Error/Cancelled). The record stays Running with its domain gone for about 10 minutes, past
// 5 × ping.interval: ghost-record gives such a VM HA's retry interval (HAGrace), as it gives an
// HA-enabled one. Found by explore --profile fixed --seed 9 (case 1260). Checked in compare mode,
// so the incremental checker sees the HA item's writes (DB.TakeChanges maps them to their VM). A
// stale item (the VM changed since it was scheduled) buys nothing: C8 still trips ghost-record in
// TestEveryDefectTripsADetector.
func TestGhostBoundAllowsAnHAItemOfAVMWithoutHA(t *testing.T) {
	t.Setenv(CheckModeEnv, "compare")
	r := runFixed(t, "testdata/ha-item-holds-non-ha-vm.yaml")
	require.Empty(t, r.Mismatches)
	require.False(t, slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Invariant == invariant.GhostRecord }),
		"ghost-record: %+v", r.Violations)
}

// When the HA item that held a ghost's reports ends (here cancelled: its host investigates Up again,
// HighAvailabilityManagerImpl.restart → checkAndCancelWorkIfNeeded at apache/cloudstack@04913a45
// server/src/main/java/com/cloud/ha/HighAvailabilityManagerImpl.java), power sync stops the record
// at the first missing report past the graceful period after the last postponement
// (VirtualMachineManagerImpl.handlePowerStateReport, apache/cloudstack main as stored: while
// hasPendingHaWork, resetVmPowerStateTracking). The HA grace went with the item, and the ghost had
// begun six minutes before: its bound must count from the hold's end (HAReleased). Found by explore
// --profile fixed --scheduler pct:8 --seed 2619683498447192753 at ea41790. The planted ghosts that
// must still be reported (no hold, a hold ended before the ghost began, the bound from the end
// outlasted) are in model/invariant's TestGhostBoundCountsFromTheEndOfAnHAHold, and C8 (a stale item
// that keeps holding) still trips ghost-record in TestEveryDefectTripsADetector.
func TestGhostBoundStartsAgainWhenAnHAHoldEnds(t *testing.T) {
	runFixedBothModes(t, "testdata/ha-hold-ends-ghost.yaml", func(t *testing.T, r *Result) {
		require.False(t, slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Invariant == invariant.GhostRecord }),
			"ghost-record: %+v", r.Violations)
		require.True(t, serverSaid(r, "Cancelling HAWork[1-HA-15-Running-Investigating] as it is not needed anymore"),
			"the run no longer ends the hold as the finding did")
	})
}

// TestDeployMigratedAsItsStartCompletes: a deploy whose VM a migration the client called takes to
// Migrating right after its start completed fails, as CloudStack's does: UserVmManagerImpl's private
// startVirtualMachine (the DeployVMCmd path; apache/cloudstack@00114e8b, server/src/main/java/com/
// cloud/vm/UserVmManagerImpl.java) reads the VM again and throws ConcurrentOperationException "Failed to
// deploy VM" unless it is Running. The failure is CloudStack's behaviour, so unexplained-start-failure
// does not report it (another actor moved the VM from Running after the start's OperationSucceeded,
// and the server said so). The planted failures that stay reported are model/invariant's
// TestDeployAnotherOperationMovedAfterItsStart.
func TestDeployMigratedAsItsStartCompletes(t *testing.T) {
	runFixedBothModes(t, "testdata/deploy-migrated-as-its-start-completes.yaml", func(t *testing.T, r *Result) {
		require.Empty(t, r.Violations)
		require.True(t, serverSaid(r, "MigrationRequested"), "the program no longer migrates the VM")
		require.True(t, serverSaid(r, "VM i-2-10-VM unexpectedly went to Migrating state"), "the deploy no longer finds its VM Migrating")
		require.True(t, serverSaid(r, "ConcurrentOperationException: Failed to deploy VM i-2-10-VM"), "the deploy no longer fails")
	})
}
