package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A caller's forced stop of a VM whose host is disconnected marks the VM Stopped and frees its address
// while the domain runs on, under both profiles: CloudStack documents stopVirtualMachine forced=true so
// (apache/cloudstack#6798; VirtualMachineManagerImpl.advanceStop with cleanUpEvenIfUnableToStop, whose
// sendStop failure is ignored for a forced stop), and the D3 fix (the fork's shouldForceStopOnDestroy,
// bhouse-nexthop@017c41e8) covers vm.destroy.forcestop on destroy only. The checkers take the call as
// the operator's assertion; without it the same run is an ip-conflict, so the assertion
// is what keeps the fixed profile clean here, and nothing else.
func TestForcedStopIsTheOperatorsAssertion(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/forced-stop-disconnected-host.yaml")
	for _, p := range []string{"cloudstack-4.22", "fixed"} {
		t.Run(p, func(t *testing.T) {
			r, err := RunScenario(sc, p, nil, sc.Seed)
			require.NoError(t, err)
			assert.Empty(t, r.Violations)
			assert.Empty(t, r.NotLinearizable)
			said := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
				return e.Actor == "checker" && e.Kind == history.Log && strings.Contains(e.Detail, "still runs after forceStop web1")
			})
			assert.True(t, said, "the history says which domain the checkers leave to the operator")
			freed := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool { return e.Kind == history.IP && e.To == "free" })
			assert.True(t, freed, "the forced stop released the address")

			believeForcedStops = false
			defer func() { believeForcedStops = true }()
			r, err = RunScenario(sc, p, nil, sc.Seed)
			require.NoError(t, err)
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.Invariant)
			}
			assert.Contains(t, got, invariant.IPConflict, "without the assertion the freed address in use is a conflict")
		})
	}
}

// A start elsewhere after a forced stop that left the domain running makes two domains of one VM
// (explore --profile fixed --seed 7, case 1692; -rapid.seed=4849297236888710621): vm3's forceStop
// releases it while h1's agent restarts, its start runs a second domain on h2, power sync follows h2
// (Starting -> Running, handlePowerOnReportWithNoPendingJobsOnVM) and then h1 ("Detected out of band
// VM migration", the record's host back to h1), and the destroy's StopCommand reaches h1's domain: the
// record goes Destroyed, the address free, while h2's domain runs. Which copy the record followed last
// is the operator's split brain, so the twin stays the operator's after h1's domain stops; before
// the twin was frozen too, the same run was an orphan-domain, an ip-conflict and a volume-in-use.
func TestForcedStopTwinDomainStaysTheOperators(t *testing.T) {
	r := runFixed(t, "testdata/forced-stop-twin-domain.yaml")
	assert.Empty(t, r.Violations)
	assert.Empty(t, r.NotLinearizable)
	ran := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
		return strings.Contains(e.Detail, "Detected out of band VM migration from host h2 to host h1")
	})
	assert.True(t, ran, "the run still has power sync follow h1's domain after h2's")
}

// A guest a forced stop left running, adopted again by power sync with its address free, is then
// migrated (explore --profile fixed --seed 3, pct:8, shrunk): VirtualMachineManagerImpl.migrate hands
// the very guest to h2. The assertion follows it; without that the checkers, which sample the domains
// host by host, see h1's asserted domain gone and a new one on h2 using a free address.
func TestAssertionFollowsMigratedGuest(t *testing.T) {
	r := runFixed(t, "testdata/forced-stop-then-migrate.yaml")
	assert.Empty(t, r.Violations)
	assert.Empty(t, r.NotLinearizable)
	said := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
		return e.Actor == "checker" && e.Kind == history.Log && strings.Contains(e.Detail, "still runs after migrate vm1")
	})
	assert.True(t, said, "the history says the migrated domain stays the operator's")

	assertionFollowsMigration = false
	defer func() { assertionFollowsMigration = true }()
	r = runFixed(t, "testdata/forced-stop-then-migrate.yaml")
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Invariant)
	}
	assert.Contains(t, got, invariant.IPConflict, "without it the migrated guest's freed address is a conflict")
}

// A migration of a VM nobody asserted stopped gets no exemption: one that left the guest running on
// its source after succeeding would be an orphan-domain (model/invariant's planted case) and the
// migration of live-migrate is judged in full.
func TestMigrationOfAnOrdinaryVMIsJudged(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/live-migrate.yaml")
	r, err := RunScenario(sc, "fixed", nil, sc.Seed)
	require.NoError(t, err)
	assert.Empty(t, r.Violations)
	exempt := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
		return e.Actor == "checker" && strings.Contains(e.Detail, "still runs after migrate")
	})
	assert.False(t, exempt)
}

// An operator's forced deleteHost of a host the server cannot reach stops its VMs forced
// (apache/cloudstack 0115b87ebb85c67f8b1e8177a86004a66112de75,
// server/src/main/java/com/cloud/resource/ResourceManagerImpl.java, deleteRoutingHost: the VMs of
// the host stopped, or scheduleRestart(vm, false), whose forced advanceStop releases a VM whose
// StopCommand cannot reach its host; doDeleteHost then removes the host): web1 goes Stopped, its
// address free, while its domain runs on the removed host. As a caller's forced stop, the removal is
// the operator's assertion that the host's VMs are stopped (explore --profile fixed --seed 5,
// --seed 16853819583969875099 --budget 1); without it the same run is an ip-conflict.
func TestHostRemovalIsTheOperatorsAssertion(t *testing.T) {
	runFixedBothModes(t, "testdata/host-remove-unreachable.yaml", func(t *testing.T, r *Result) {
		assert.Empty(t, r.Violations)
		assert.Empty(t, r.NotLinearizable)
		said := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
			return e.Actor == "checker" && e.Kind == history.Log && strings.Contains(e.Detail, "still runs after host-remove")
		})
		assert.True(t, said, "the history says which domain the checkers leave to the operator")
	})
	believeForcedStops = false
	defer func() { believeForcedStops = true }()
	r := runFixed(t, "testdata/host-remove-unreachable.yaml")
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Invariant)
	}
	assert.Contains(t, got, invariant.IPConflict, "without the assertion the freed address in use is a conflict")
}

// The removal's assertion is the removed host's VMs' only: D3's orphaned domain on another host (its
// address handed to a new VM) is still reported under cloudstack-4.22 when an operator removes h2.
func TestHostRemovalExplainsOnlyItsHostsVMs(t *testing.T) {
	sc := loadScenario(t, "testdata/host-remove-elsewhere-d3.yaml")
	r, err := RunScenario(sc, "cloudstack-4.22", nil, sc.Seed)
	require.NoError(t, err)
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Invariant)
	}
	assert.Contains(t, got, invariant.OrphanDomain)
	assert.Contains(t, got, invariant.IPConflict)
	removed := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
		return e.Kind == history.State && e.Object == "host:h2" && e.To == "Removed"
	})
	assert.True(t, removed, "h2 was removed")
}

// doDeleteHost's last sweep (apache/cloudstack 0115b87ebb85c67f8b1e8177a86004a66112de75,
// server/src/main/java/com/cloud/resource/ResourceManagerImpl.java, doDeleteHost: "Make sure any VMs
// that were marked as being on this host are cleaned up": vm.setState(State.Stopped);
// vm.setHostId(null); _vmDao.persist(vm), in the transaction that removes the host) leaves no VM
// marked on a removed host. Without it, a router whose start HA's restart sent to the host while
// the delete ran stayed Starting there for good (explore --profile fixed --seed 5, shrunk): a
// stuck-in-transition 35 minutes on.
func TestRemovedHostKeepsNoVM(t *testing.T) {
	runFixedBothModes(t, "testdata/host-remove-starting-router.yaml", func(t *testing.T, r *Result) {
		assert.Empty(t, r.Violations)
		assert.Empty(t, r.NotLinearizable)
		assert.Empty(t, r.cluster.DB.VMs(func(v *impl.VMVO) bool { return !v.Removed && v.HostID == "h1" }), "no VM marked on the removed host")
		swept := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
			return e.Kind == history.State && e.Direct && e.From == "Starting" && e.To == "Stopped" && strings.Contains(e.Detail, "setState")
		})
		assert.True(t, swept, "the sweep set the Starting router Stopped around the state machine")
	})
}

// A domain that starts on a host while an operator removes it is the operator's too (explore
// --profile fixed --seed 1, case 2,789, shrunk): HA's restart of a VM the delete handed to it plans
// the host, still Up, and starts the network's router there; the delete's last sweep sets the
// router Stopped with no host while its domain runs on in the removed host. The next start of the
// router elsewhere makes a second domain with the same address: without the rule, an orphan-domain
// and an ip-conflict between the two.
func TestDomainStartedOnARemovedHostIsTheOperators(t *testing.T) {
	runFixedBothModes(t, "testdata/host-remove-router-started-there.yaml", func(t *testing.T, r *Result) {
		assert.Empty(t, r.Violations)
		assert.Empty(t, r.NotLinearizable)
		said := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
			return e.Actor == "checker" && e.Kind == history.Log && strings.Contains(e.Detail, "domain r-8-VM still runs after host-remove")
		})
		assert.True(t, said, "the router's domain on the removed host is left to the operator")
	})
	removedHostsDomains = false
	defer func() { removedHostsDomains = true }()
	r := runFixed(t, "testdata/host-remove-router-started-there.yaml")
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Invariant)
	}
	assert.Contains(t, got, invariant.OrphanDomain)
	assert.Contains(t, got, invariant.IPConflict)
}

// Finding A of explore --profile fixed --scheduler pct:8 --seed 5 (replay: --seed
// 10902015191296071327 --budget 1). vm4's forceStop during h1's agent restart leaves its domain running
// (the operator's assertion); the deploy's retry fails and moves it to Error; power sync handles h1's
// PowerOn report of the Error record three times and then no more, and the destroy (Error -DestroyRequested->
// Expunging, no stop: advanceStop returns early for Error) is followed by no handled report, so PR
// #14207's stop on the reporting host never runs for it. The Java, read for it:
//   - bhouse-nexthop/cloudstack@15eb2bcd engine/schema/src/main/java/com/cloud/vm/dao/VMInstanceDaoImpl.java
//     updatePowerState: a report with the stored power state and power host is written only while
//     power_state_update_count < MAX_CONSECUTIVE_SAME_STATE_UPDATE_COUNT (3);
//     isPowerStateInSyncWithInstanceState counts PowerOn out of sync with a Stopped record only;
//   - apache/cloudstack@0ded906d engine/orchestration/src/main/java/com/cloud/vm/VirtualMachinePowerStateSyncImpl.java
//     processReport: VM_POWER_STATE is published only when updatePowerState wrote ("VM power state
//     does not change, skip DB writing" otherwise), so handlePowerStateReport is not reached;
//   - bhouse-nexthop/cloudstack@d4da80c5 engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java
//     advanceStop(vm, …): "Stopped called on … but the state is Error" returns; destroy: DestroyRequested
//     (Error -> Expunging, api/src/main/java/com/cloud/vm/VirtualMachine.java s_fsm);
//   - UserVmDaoImpl.findDestroyedVms (upstream copies, commit not reported): the expunge task takes
//     Destroyed, Expunging and Error records whose update_time is expunge.delay old, and expunges them
//     through advanceExpunge, where PR #14207 asks the last known host to stop the instance first.
//
// So the domain is bounded in CloudStack by the expunge task, not by a ping: the end-of-run
// orphan-domain check (CheckDestroyedAssertedDomains) leaves such a record alone (reportsWithheld,
// TestDestroyedAssertedDomainsReportsWithheld for the planted cases).
func TestErrorVMDestroyedReportsWithheld(t *testing.T) {
	r := runFixed(t, "testdata/error-vm-destroyed-reports-withheld.yaml")
	assert.Empty(t, r.Violations)
	assert.Empty(t, r.NotLinearizable)
	assert.True(t, serverSaid(r, "is reported running by host h1 but is in Error state"), "the run still alerts the Error record's domain")
	assert.True(t, serverSaid(r, "Stopped called on i-2-25-VM but the state is Error"), "the run still destroys the Error record without a stop")
	destroyed := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
		return e.Kind == history.State && e.Object == "vm:25" && e.From == "Error" && e.To == "Expunging"
	})
	assert.True(t, destroyed, "the run still moves the record Error -> Expunging")
}
