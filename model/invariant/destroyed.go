package invariant

import (
	"fmt"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// CheckDestroyedAssertedDomains is judged at the end of a run (after its settle): a running domain that
// a caller's forced stop left to the operator (Domain.Asserted, which CheckOrphanDomains excuses) is
// an orphan-domain all the same once its VM is Destroyed or Expunging and its host has been Up for the
// report grace: since PR #14207 CloudStack stops a powered-on Destroyed or Expunging instance on the
// host that reports it (VirtualMachineManagerImpl.handlePowerOnReportWithNoPendingJobsOnVM →
// stopUnmanagedInstanceOnReportingHost), whatever asserted it stopped. Judged at the end only: a VM
// destroyed while its host is settled is reported within a ping, and a check at its destroy would
// find the domain before that report. So is one whose record was expunged while the domain's host
// was Up and reachable (expungedWhileReachable).
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
		if len(live) == 0 {
			if r, at, ok := expungedWhileReachable(s, d, byName[d.Name]); ok {
				out = append(out, Violation{Invariant: OrphanDomain, Object: "domain:" + d.Name, Time: s.Time,
					Message: fmt.Sprintf("domain %s is running but record %s was expunged at %s while its last host %s was Up and reachable (a caller's forced stop asserted it stopped; the expunge asks the last host to stop the instance first)", domainName(d), r.ID, at.Format("15:04:05.000"), d.HostID)})
			}
			continue
		}
		if !allDestroyed(live) || reportsWithheld(s, d, live) {
			continue
		}
		out = append(out, Violation{Invariant: OrphanDomain, Object: "domain:" + d.Name, Time: s.Time,
			Message: fmt.Sprintf("domain %s is running but record %s is %s (a caller's forced stop asserted it stopped; its host has reported it since)", domainName(d), live[0].ID, live[0].State)})
	}
	sortViolations(out)
	return out
}

// maxSameStateReports is VMInstanceDaoImpl's MAX_CONSECUTIVE_SAME_STATE_UPDATE_COUNT.
const maxSameStateReports = 3

// reportsWithheld says whether power sync had stopped handling the host's reports of domain d before
// its record became Destroyed or Expunging, so that PR #14207's stop on the reporting host never ran
// for it: VMInstanceDaoImpl.updatePowerState writes (and processReport publishes, the only way
// handlePowerOnReportWithNoPendingJobsOnVM is reached) a report that repeats the stored power state
// and power host only while power_state_update_count is below 3, and
// isPowerStateInSyncWithInstanceState counts PowerOn out of sync with a Stopped record only, not with
// an Error, Destroyed or Expunging one. A record whose PowerOn reports from d's host were counted to 3
// before its destroy (a VM in Error with its domain running: three "not managed" alerts, then silence)
// gets no report handled after it; the domain stays the operator's, as its forced stop made it,
// until the expunge task (expunge.delay, a day by default) expunges the record and PR #14207's
// advanceExpunge asks the last host to stop it, which the reference does not model. Unknown power
// columns (a world that does not export them) withhold nothing.
func reportsWithheld(s Snapshot, d Domain, live []VM) bool {
	for _, r := range live {
		if r.Power != vm.PowerOn || r.PowerHost != d.HostID || r.PowerCount < maxSameStateReports || r.PowerUpdated.IsZero() {
			return false
		}
		var destroyed time.Time // the record's last move into Destroyed or Expunging
		for _, w := range s.VMWrites {
			if w.VMID == r.ID && (w.To == vm.Destroyed || w.To == vm.Expunging) && w.From != w.To {
				destroyed = w.Time
			}
		}
		if destroyed.IsZero() || !r.PowerUpdated.Before(destroyed) {
			return false // a report was handled since: it saw the Destroyed or Expunging record
		}
	}
	return true
}

// expungedWhileReachable finds the removed record of an asserted domain whose expunge ran while the
// domain's host, the record's last host, was Up (since before the expunge's call, and still) and no
// fault cut the server's reach to it: PR #14207's expunge (ensureInstanceIsStoppedOnLastKnownHost,
// the reference's advanceExpunge) asks that host to stop the instance before it expunges, so a
// reachable host stops it. An expunge while the host was away goes on without it, and the host's
// next report names an unmanaged instance: the operator's, as the forced stop was.
func expungedWhileReachable(s Snapshot, d Domain, recs []VM) (VM, time.Time, bool) {
	var h *Host
	for i := range s.Hosts {
		if s.Hosts[i].ID == d.HostID {
			h = &s.Hosts[i]
		}
	}
	if h == nil || h.Status != host.Up {
		return VM{}, time.Time{}, false
	}
	for _, r := range recs {
		if !r.Removed || r.LastHostID != d.HostID {
			continue
		}
		var removed time.Time
		for _, w := range s.VMWrites {
			if w.VMID == r.ID && w.To == expunged {
				removed = w.Time
			}
		}
		if removed.IsZero() {
			continue
		}
		from := removed // the expunge's call, where the history has it
		for _, op := range s.Ops {
			if op.VMID == r.ID && (op.Kind == "expunge" || op.Kind == "destroyExpunge") && !op.Call.After(removed) {
				from = op.Call
			}
		}
		if h.UpSince.After(from) || reachCut(s.Faults, d.HostID, from, removed) {
			continue
		}
		return r, removed, true
	}
	return VM{}, time.Time{}, false
}

// expunged is a removal's To in a history (the record's end, not a state of the machine).
const expunged vm.State = "Expunged"

// reachCut says whether a fault that cuts the server's reach to host h (its link, its agent, its
// power, the server itself) was active at some moment of [from, to]. A failing storage heartbeat
// leaves the agent's link as it was.
func reachCut(fs []Fault, h string, from, to time.Time) bool {
	for _, f := range fs {
		if f.Kind == "heartbeat-fail" || !f.Disruptive || f.Begin.After(to) || (!f.End.IsZero() && f.End.Before(from)) {
			continue
		}
		for _, t := range f.Targets {
			if t == "host:"+h || t == "ms" {
				return true
			}
		}
	}
	return false
}

func allDestroyed(recs []VM) bool {
	for _, r := range recs {
		if r.State != vm.Destroyed && r.State != vm.Expunging {
			return false
		}
	}
	return true
}
