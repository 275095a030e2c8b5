package detect

import "github.com/csconform/csconform/model/invariant"

// TwoLooks is the checking of a world whose records and domains are read one after the other, not
// atomically (the real-time worlds): a violation of the domains' truth (orphan-domain, ip-conflict,
// volume-in-use) counts once two checks in a row see it, as a domain read just before its record
// moved may show one look only. Violations judged on the history alone stand at once.
type TwoLooks struct {
	prev map[string]bool // truth violations seen by the previous check
}

// Confirm returns the violations of one check that stand.
func (t *TwoLooks) Confirm(vs []invariant.Violation) []invariant.Violation {
	cur := map[string]bool{}
	var out []invariant.Violation
	for _, v := range vs {
		switch v.Invariant {
		case invariant.OrphanDomain, invariant.IPConflict, invariant.VolumeInUse:
			k := v.Invariant + "|" + v.Object
			cur[k] = true
			if !t.prev[k] {
				continue
			}
		}
		out = append(out, v)
	}
	t.prev = cur
	return out
}
