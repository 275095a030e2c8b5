package harness

import "github.com/csconform/csconform/model/invariant"

// checkDestroyedAssertedDomains judges, at the end of a run, the domains a caller's forced stop left
// running whose VM has since been destroyed (invariant.CheckDestroyedAssertedDomains).
func (c *Cluster) checkDestroyedAssertedDomains() {
	for _, v := range invariant.CheckDestroyedAssertedDomains(c.Snapshot()) {
		c.report(v)
	}
}
