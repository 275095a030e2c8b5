package harness

import (
	"fmt"
	"strings"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// twoLooks is the checking of a world whose records and domains are read one after the other, not
// atomically (the real-time worlds): a violation of the domains' truth counts once two checks in a
// row see it. Violations judged on the history alone stand at once.
type twoLooks struct {
	prev map[string]bool // truth violations seen by the previous check
}

func (t *twoLooks) confirm(vs []invariant.Violation) []invariant.Violation {
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

// outsideChecks is the checking of a world that sees the server from outside (containers, an external
// CloudStack): two looks (twoLooks) for the domains' truth; network-lock needs each write's lock
// holder, which stays in the server, and is not checked; each violation is reported once, into the
// history and with the steps that led to it.
type outsideChecks struct {
	looks twoLooks
	seen  map[string]bool
}

// add checks a snapshot and returns the violations new in it. objs names, for a violation's object,
// the other objects its trail should follow (a domain's VM records).
func (oc *outsideChecks) add(rec *Recorder, s invariant.Snapshot, objs func(object string) []string) []Violation {
	if oc.seen == nil {
		oc.seen = map[string]bool{}
	}
	var out []Violation
	for _, v := range oc.looks.confirm(invariant.Check(s)) {
		if v.Invariant == invariant.NetworkLock {
			continue
		}
		key := fmt.Sprintf("%s|%s|%v", v.Invariant, v.Object, strings.Contains(v.Message, "free"))
		if oc.seen[key] {
			continue
		}
		oc.seen[key] = true
		rec.Emit(history.Event{Actor: "checker", Kind: history.Violation, Object: v.Object, To: v.Invariant, Detail: v.Message})
		var trail []TrailEvent
		for _, e := range rec.Trail(append([]string{v.Object}, objs(v.Object)...), v.Time, 30) {
			trail = append(trail, TrailEvent{Time: e.Time, Actor: e.Actor, Event: describe(e)})
		}
		out = append(out, Violation{Violation: v, Trail: trail})
	}
	return out
}
