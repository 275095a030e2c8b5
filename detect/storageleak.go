package detect

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// Storage is what a world observes of primary storage at the end of a run: the volume files it holds,
// by path, and the VM a volume belonged to (volumes.instance_id, which a removed row keeps), which the
// history's volume transitions do not name. A world that cannot list its storage leaves the check off.
type Storage struct {
	Files map[string]bool
	VMOf  func(volume string) string // volume:<id> → the VM's id; nil: not known
}

// StorageLeaks judges the volumes against what primary storage holds at the end of a run (at): a
// volume whose last transition in the history is to Expunged while its file (the transition's
// detail) is still there is a storage-leak. advanceExpunge marks a volume Expunged only once its host
// answered the DeleteCommand (a failed delete leaves it Destroy, for the storage GC to retry); one
// marked Expunged over a failed delete is space nobody will free, and no other invariant sees it once
// no domain holds the file. Destroy and Expunging volumes still have their delete ahead of them.
func StorageLeaks(events iter.Seq[history.Event], st Storage, at time.Time) []invariant.Violation {
	type volume struct{ state, path string }
	vols := map[string]*volume{}
	for e := range events {
		if e.Kind != history.State || !strings.HasPrefix(e.Object, "volume:") {
			continue
		}
		v := vols[e.Object]
		if v == nil {
			v = &volume{}
			vols[e.Object] = v
		}
		v.state, v.path = e.To, e.Detail
	}
	var out []invariant.Violation
	for obj, v := range vols {
		if v.state != "Expunged" || !st.Files[v.path] {
			continue
		}
		vm := ""
		if st.VMOf != nil {
			vm = st.VMOf(obj)
		}
		out = append(out, invariant.Violation{Invariant: invariant.StorageLeak, Object: obj, Time: at,
			Message: fmt.Sprintf("volume %s (%s) of VM %s is Expunged but its file is still on primary storage", strings.TrimPrefix(obj, "volume:"), v.path, vm)})
	}
	slices.SortFunc(out, func(a, b invariant.Violation) int {
		return cmp.Or(cmp.Compare(a.Object, b.Object), cmp.Compare(a.Message, b.Message))
	})
	return out
}
