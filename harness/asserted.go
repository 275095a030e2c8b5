package harness

import "github.com/csconform/csconform/model/history"

// A caller's forced stop, an operator's host removal and the migration of a guest they left running
// are the operator's assertion (detect.AssertedStops says what the checkers believe); the cluster
// feeds it as the operations begin and end.

// believeForcedStops is off only in the test that shows what the assertion hides.
var believeForcedStops = true

// removedHostsDomains is off only in the test that shows a domain started on a host while an operator
// removed it, without the rule that makes it the operator's.
var removedHostsDomains = true

// assertionFollowsMigration is off only in the test that shows the migrated guest without it.
var assertionFollowsMigration = true

// forceStopBegins marks the forced stop of VM vmID (domain name) in flight.
func (c *Cluster) forceStopBegins(vmID, name string) {
	if believeForcedStops {
		c.Rec.asserted.ForceStopBegins(vmID, name)
	}
}

// hostRemovalBegins marks host h removed by an operator: from now on every domain that runs there is
// the operator's.
func (c *Cluster) hostRemovalBegins(h string) {
	if believeForcedStops && removedHostsDomains {
		c.Rec.asserted.HostRemovalBegins(h)
	}
}

// forceStopEnds keeps the assertion for every domain of the VM that still runs, whatever the stop's
// outcome, and says so in the history.
func (c *Cluster) forceStopEnds(vmName, name string) { c.assertionEnds(vmName, name, "forceStop") }

// migrateBegins hands the assertion of a VM that is the operator's to its migration (false: the VM is
// not the operator's).
func (c *Cluster) migrateBegins(name string) bool {
	return believeForcedStops && assertionFollowsMigration && c.Rec.asserted.MigrateBegins(name)
}

// migrateEnds is forceStopEnds for a migration migrateBegins took.
func (c *Cluster) migrateEnds(vmName, name string) { c.assertionEnds(vmName, name, "migrate") }

// assertionEnds closes an operation that held a VM the operator's (op: its kind, for the history's
// line) and keeps the assertion for every domain of the VM that still runs.
func (c *Cluster) assertionEnds(vmName, name, op string) {
	if !believeForcedStops {
		return
	}
	for _, h := range c.Rec.asserted.End(name, c.w.domains()) {
		c.Rec.Emit(history.Event{Actor: "checker", Kind: history.Log, Level: "INFO", Object: "host:" + h,
			Detail: "domain " + name + " still runs after " + op + " " + vmName + ": the caller asserted it stopped; the checkers leave " + vmName + " to the operator until it stops"})
	}
}
