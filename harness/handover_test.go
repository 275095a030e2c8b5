package harness

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/invariant"
)

// TestTimedOutMigrationCompletesInTheHypervisor: a live migration whose MigrateCommand times out (the
// source's agent restarts during the memory copy) completes in the hypervisor without the server,
// which has moved the record back to the source (VirtualMachineManagerImpl.migrate's finally:
// OperationFailed to srcHostId, apache/cloudstack@3156c4ba62c07c065d1aac119b0dac31242797b3
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java) until the
// destination's next report (handlePowerOnReportWithNoPendingJobsOnVM, case Running: "Detected out of
// band VM migration", FollowAgentPowerOnReport). Neither the handover (the guest on both hosts) nor
// the guest on the destination under a record naming the source is a violation, for either checker
// or for the address model. The planted bugs of the class (a source that never stops, a destination
// domain power sync never follows, a domain with no migration, two VMs on one address) are in
// model/invariant's TestTimedOutMigrationHandover.
func TestTimedOutMigrationCompletesInTheHypervisor(t *testing.T) {
	runFixedBothModes(t, "testdata/timed-out-migration-completes-in-hypervisor.yaml", func(t *testing.T, r *Result) {
		require.Empty(t, r.Violations)
		require.True(t, r.LinearChecked)
		require.Empty(t, r.NotLinearizable)
		require.True(t, serverSaid(r, "Active migration command so scheduling a restart"), "the migration no longer times out")
		require.True(t, serverSaid(r, "Detected out of band VM migration"), "power sync no longer follows the destination")
	})
}

// TestTimedOutMigrationHAFindsTheGuestOnItsDestination: a live migration whose MigrateCommand is
// cancelled during the memory copy (the source's agent reconnects) schedules an HA restart with
// investigation, whose item takes the VO's host — the destination, once MigrationRequested
// (HighAvailabilityManagerImpl.restart's Investigating branch; VirtualMachineManagerImpl.migrate,
// apache/cloudstack@3156c4ba62c07c065d1aac119b0dac31242797b3
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java). SimpleInvestigator's
// CheckVirtualMachineCommand to the destination finds the incoming domain, paused, which the KVM agent
// answers PowerOn (LibvirtCheckVirtualMachineCommandWrapper.execute → getVmState, s_powerStatesTable:
// VIR_DOMAIN_PAUSED → PowerOn; apache/cloudstack@400e1ee7, @e6b43860): HA leaves the VM alone and power
// sync follows the guest to the destination. Found by explore --profile fixed --scheduler random --seed
// 759311211419962205, where the simulator's destination had nothing until the copy ended: HA found the
// VM dead, force-stopped it at the source after the copy and released the NICs of the guest on h2.
func TestTimedOutMigrationHAFindsTheGuestOnItsDestination(t *testing.T) {
	runFixedBothModes(t, "testdata/timed-out-migration-ha-investigates-destination.yaml", func(t *testing.T, r *Result) {
		require.Empty(t, r.Violations)
		require.Empty(t, r.NotLinearizable)
		require.True(t, serverSaid(r, "Active migration command so scheduling a restart"), "the migration no longer times out")
		require.True(t, serverSaid(r, "to be alive? true"), "HA's investigation no longer meets the incoming domain")
		require.True(t, serverSaid(r, "is alive and host is up. No need to restart it."))
		require.True(t, serverSaid(r, "Detected out of band VM migration"), "power sync no longer follows the destination")
	})
}

// TestMigrateTimeoutSourcePowerOffStaysMigrating is C13 in the shape explore found it (issue 46 item
// 4): the MigrateCommand's answer lost with its source's power just after the guest resumed on the
// destination, whose link is cut. VirtualMachineManagerImpl.migrate's finally
// (apache/cloudstack@3156c4ba62c07c065d1aac119b0dac31242797b3
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java) sends the cleanup
// StopCommand to the unreachable destination and moves the record back to the source
// (OperationFailed): the HA item the timeout scheduled finds the VM changed
// (HighAvailabilityManagerImpl.restart), HA for the Down source fences it and force-stops the VM, its
// NIC released under the guest on the destination, which power sync later adopts without the
// address. With C13's fix the VM stays Migrating and the destination's first ping once it is back
// follows the guest there.
func TestMigrateTimeoutSourcePowerOffStaysMigrating(t *testing.T) {
	runFixedBothModes(t, "testdata/migrate-timeout-source-power-off.yaml", func(t *testing.T, r *Result) {
		require.Empty(t, r.Violations)
		require.True(t, serverSaid(r, "Active migration command so scheduling a restart"), "the MigrateCommand no longer times out")
		require.True(t, serverSaid(r, "leaving it Migrating for HA and power sync"), "the cleanup reached the destination")
		require.True(t, serverSaid(r, "is at Migrating and we received a power-on report"), "power sync no longer follows the destination")
	})
	t.Run("C13", func(t *testing.T) {
		sc := loadScenario(t, "testdata/migrate-timeout-source-power-off.yaml")
		sw, err := impl.ParseDefects("C13")
		require.NoError(t, err)
		r, err := RunScenario(sc, "", sw, sc.Seed)
		require.NoError(t, err)
		var got []string
		for _, v := range r.Violations {
			got = append(got, v.Invariant)
		}
		require.Contains(t, got, invariant.IPConflict)
		require.True(t, serverSaid(r, "continue with release because it's a force stop"), "HA no longer force-stops the VM on its source")
	})
}
