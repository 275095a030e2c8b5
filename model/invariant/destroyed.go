package invariant

import (
	"fmt"

	"github.com/csconform/csconform/model/vm"
)

// CheckDestroyedAssertedDomains is judged at the end of a run (after its settle): a running domain that
// a caller's forced stop left to the operator (Domain.Asserted, which CheckOrphanDomains excuses) is
// an orphan-domain all the same once its VM is Destroyed or Expunging and its host has been Up for the
// report grace: since PR #14207 CloudStack stops a powered-on Destroyed or Expunging instance on the
// host that reports it (VirtualMachineManagerImpl.handlePowerOnReportWithNoPendingJobsOnVM →
// stopUnmanagedInstanceOnReportingHost), whatever asserted it stopped. Judged at the end only: a VM
// destroyed while its host is settled is reported within a ping, and a check at its destroy would
// find the domain before that report.
func CheckDestroyedAssertedDomains(s Snapshot) []Violation {
	byName := recordsByName(s.VMs)
	settled := settledHosts(s)
	var out []Violation
	for _, d := range runningDomains(s.Domains) {
		if !d.Asserted || !settled[d.HostID] {
			continue
		}
		var live []VM
		for _, r := range byName[d.Name] {
			if !r.Removed {
				live = append(live, r)
			}
		}
		if len(live) == 0 || !allDestroyed(live) {
			continue
		}
		out = append(out, Violation{Invariant: OrphanDomain, Object: "domain:" + d.Name, Time: s.Time,
			Message: fmt.Sprintf("domain %s is running but record %s is %s (a caller's forced stop asserted it stopped; its host has reported it since)", domainName(d), live[0].ID, live[0].State)})
	}
	sortViolations(out)
	return out
}

func allDestroyed(recs []VM) bool {
	for _, r := range recs {
		if r.State != vm.Destroyed && r.State != vm.Expunging {
			return false
		}
	}
	return true
}
