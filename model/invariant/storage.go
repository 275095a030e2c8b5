package invariant

import (
	"fmt"
	"slices"
	"time"
)

// StorageLeak is judged at the end of a run by the harness, in a world that can list what primary
// storage holds: a volume the records call Expunged whose file is still there. advanceExpunge marks a
// volume Expunged only once its host answered the DeleteCommand (a failed delete leaves it Destroy, for
// the storage GC to retry); a volume marked Expunged over a failed delete is space nobody will free,
// and no other invariant sees it once no domain holds the file.
const StorageLeak = "storage-leak"

// CheckStorageLeaks judges the volume records against the files primary storage holds (onStorage: the
// paths present). Only Expunged rows are judged: Destroy and Expunging rows still have their delete
// ahead of them.
func CheckStorageLeaks(vols []Volume, onStorage map[string]bool, t time.Time) []Violation {
	var out []Violation
	for _, v := range vols {
		if v.State != "Expunged" || !onStorage[v.Path] {
			continue
		}
		out = append(out, Violation{Invariant: StorageLeak, Object: "volume:" + v.ID, Time: t,
			Message: fmt.Sprintf("volume %s (%s) of VM %s is Expunged but its file is still on primary storage", v.ID, v.Path, v.VMID)})
	}
	sortViolations(out)
	return slices.Clip(out)
}
