package invariant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// The planted bug is the catalogue's powersync-stop-unmanaged-on-record-host (the StopCommand for a
// reported Destroyed instance goes to the record's host, none for a destroyed VM, so the domain a
// forced stop left running runs on); the fix stops it on the reporting host, and the run ends with no
// domain. CloudStack's since PR #14207: bhouse-nexthop/cloudstack@d4da80c5
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java,
// handlePowerOnReportWithNoPendingJobsOnVM → stopUnmanagedInstanceOnReportingHost.
func TestDestroyedAssertedDomains(t *testing.T) {
	now := time.Unix(10000, 0)
	asserted := Domain{HostID: "h1", Name: "i-2-3-VM", Running: true, Asserted: true}
	cases := []struct {
		name    string
		state   vm.State
		removed bool
		dom     Domain
		upSince time.Time
		want    int
	}{
		{"destroyed, domain left running, host reported since (planted)", vm.Destroyed, false, asserted, now.Add(-10 * time.Minute), 1},
		{"expunging, likewise", vm.Expunging, false, asserted, now.Add(-10 * time.Minute), 1},
		{"destroyed, domain stopped on the reporting host (fixed)", vm.Destroyed, false, Domain{HostID: "h1", Name: "i-2-3-VM", Running: false, Asserted: true}, now.Add(-10 * time.Minute), 0},
		{"destroyed, host back within the report grace", vm.Destroyed, false, asserted, now.Add(-30 * time.Second), 0},
		{"stopped by the forced stop: the operator's", vm.Stopped, false, asserted, now.Add(-10 * time.Minute), 0},
		{"expunged record, the history has no removal line: not judged", vm.Expunging, true, asserted, now.Add(-10 * time.Minute), 0},
		{"not asserted: CheckOrphanDomains' case", vm.Destroyed, false, Domain{HostID: "h1", Name: "i-2-3-VM", Running: true}, now.Add(-10 * time.Minute), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Snapshot{Time: now, ReportGrace: 2 * time.Minute,
				VMs:     []VM{{ID: "3", Name: "i-2-3-VM", Type: "User", State: c.state, Removed: c.removed, LastHostID: "h1"}},
				Hosts:   []Host{{ID: "h1", Name: "h1", Status: host.Up, UpSince: c.upSince}},
				Domains: []Domain{c.dom}}
			vs := CheckDestroyedAssertedDomains(s)
			assert.Len(t, vs, c.want)
			for _, v := range vs {
				assert.Equal(t, OrphanDomain, v.Invariant)
			}
		})
	}
}

// The planted bug is the catalogue's expunge-asks-host-only-for-error: the expunge of a Destroyed VM
// whose domain a forced stop left running does not ask its last host to stop the instance, so the
// domain runs on with no record at all. The fix (PR #14207's ensureInstanceIsStoppedOnLastKnownHost,
// the reference's advanceExpunge under fixed) stops it there when the host is reachable; when it is
// not, the expunge goes on and the host's next report names an unmanaged instance (an alert): the
// operator's, as the forced stop was. Scenario: expunge-destroyed-on-returning-host.
func TestExpungedAssertedDomains(t *testing.T) {
	now := time.Unix(10000, 0)
	call, removed := now.Add(-5*time.Minute), now.Add(-5*time.Minute+3*time.Second)
	asserted := Domain{HostID: "h1", Name: "i-2-3-VM", Running: true, Asserted: true}
	expunge := ClientOp{ID: 7, Kind: "expunge", VMID: "3", Call: call, Return: removed.Add(time.Second), OK: true}
	removal := VMChange{Time: removed, VMID: "3", From: vm.Expunging, To: "Expunged", Actor: "API-Job-Executor-33"}
	cut := func(kind string, begin, end time.Time) Fault {
		return Fault{Kind: kind, Targets: []string{"host:h1"}, Begin: begin, End: end, Disruptive: true}
	}
	cases := []struct {
		name     string
		dom      Domain
		lastHost string
		upSince  time.Time
		faults   []Fault
		want     int
	}{
		{"expunged while its host was Up and reachable, domain left running (planted)", asserted, "h1", now.Add(-10 * time.Minute), nil, 1},
		{"likewise, the host back Up seconds before the expunge's call", asserted, "h1", call.Add(-time.Second), nil, 1},
		{"a storage heartbeat failing meanwhile cuts nothing", asserted, "h1", now.Add(-10 * time.Minute), []Fault{cut("heartbeat-fail", now.Add(-20*time.Minute), time.Time{})}, 1},
		{"domain stopped by the expunge (fixed)", Domain{HostID: "h1", Name: "i-2-3-VM", Running: false, Asserted: true}, "h1", now.Add(-10 * time.Minute), nil, 0},
		{"host came back only after the expunge", asserted, "h1", removed.Add(time.Minute), nil, 0},
		{"link cut during the expunge: its StopCommand may be lost", asserted, "h1", now.Add(-10 * time.Minute), []Fault{cut("disconnect", call.Add(-time.Minute), call.Add(2*time.Second))}, 0},
		{"agent away during the expunge", asserted, "h1", now.Add(-10 * time.Minute), []Fault{cut("agent-restart", call.Add(time.Second), removed.Add(time.Second))}, 0},
		{"a link cut over before the expunge's call", asserted, "h1", now.Add(-10 * time.Minute), []Fault{cut("disconnect", call.Add(-time.Hour), call.Add(-time.Minute))}, 1},
		{"domain on another host than the record's last one", asserted, "h2", now.Add(-10 * time.Minute), nil, 0},
		{"not asserted: CheckOrphanDomains' case", Domain{HostID: "h1", Name: "i-2-3-VM", Running: true}, "h1", now.Add(-10 * time.Minute), nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Snapshot{Time: now, ReportGrace: 2 * time.Minute,
				VMs:      []VM{{ID: "3", Name: "i-2-3-VM", Type: "User", State: vm.Expunging, Removed: true, LastHostID: c.lastHost}},
				Hosts:    []Host{{ID: "h1", Name: "h1", Status: host.Up, UpSince: c.upSince}, {ID: "h2", Name: "h2", Status: host.Up}},
				Domains:  []Domain{c.dom},
				Ops:      []ClientOp{expunge},
				VMWrites: []VMChange{removal},
				Faults:   c.faults}
			vs := CheckDestroyedAssertedDomains(s)
			assert.Len(t, vs, c.want)
			for _, v := range vs {
				assert.Equal(t, OrphanDomain, v.Invariant)
			}
		})
	}
}

// A record whose PowerOn reports from the domain's host power sync had stopped handling before its
// destroy (VMInstanceDaoImpl.updatePowerState, bhouse-nexthop/cloudstack@15eb2bcd: a report repeating
// the stored power state and host is written, and VirtualMachinePowerStateSyncImpl.processReport,
// apache/cloudstack@0ded906d, publishes it, only while power_state_update_count < 3; PowerOn is out of
// sync with a Stopped record only) gets no handled report after it, so PR #14207's stop on the reporting
// host never runs for it: the domain is the operator's until the expunge task (explore --profile fixed
// --scheduler pct:8 --seed 10902015191296071327: an Error record, three "not managed" alerts, then its
// destroy). The planted bug, powersync-stop-unmanaged-on-record-host, handles a report after the destroy
// and sends its stop nowhere: judged still, as is any record whose next report would be published.
func TestDestroyedAssertedDomainsReportsWithheld(t *testing.T) {
	now := time.Unix(10000, 0)
	destroyedAt := now.Add(-5 * time.Minute)
	asserted := Domain{HostID: "h1", Name: "i-2-3-VM", Running: true, Asserted: true}
	cases := []struct {
		name      string
		power     vm.PowerState
		powerHost string
		count     int
		updated   time.Time
		want      int
	}{
		{"a report handled after the destroy, the stop sent to the record's host (planted)", vm.PowerOn, "h1", 3, destroyedAt.Add(time.Minute), 1},
		{"counted twice before the destroy: the next report is published", vm.PowerOn, "h1", 2, destroyedAt.Add(-time.Minute), 1},
		{"the stored power host is another: h1's report is a change", vm.PowerOn, "h2", 3, destroyedAt.Add(-time.Minute), 1},
		{"stored PowerOff: h1's PowerOn report is a change", vm.PowerOff, "h1", 3, destroyedAt.Add(-time.Minute), 1},
		{"power columns unknown: judged as before", "", "", 0, time.Time{}, 1},
		{"counted to 3 before the destroy: no report handled since (the finding)", vm.PowerOn, "h1", 3, destroyedAt.Add(-time.Minute), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Snapshot{Time: now, ReportGrace: 2 * time.Minute,
				VMs: []VM{{ID: "3", Name: "i-2-3-VM", Type: "User", State: vm.Expunging, LastHostID: "h1",
					Power: c.power, PowerHost: c.powerHost, PowerCount: c.count, PowerUpdated: c.updated}},
				Hosts:    []Host{{ID: "h1", Name: "h1", Status: host.Up, UpSince: now.Add(-10 * time.Minute)}},
				Domains:  []Domain{asserted},
				VMWrites: []VMChange{{Time: destroyedAt, VMID: "3", From: vm.Error, To: vm.Expunging, Actor: "API-Job-Executor-48"}}}
			vs := CheckDestroyedAssertedDomains(s)
			assert.Len(t, vs, c.want)
		})
	}
}
