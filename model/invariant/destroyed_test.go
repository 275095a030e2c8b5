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
		{"expunged record: nothing to report it by", vm.Expunging, true, asserted, now.Add(-10 * time.Minute), 0},
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
