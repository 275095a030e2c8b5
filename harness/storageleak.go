package harness

import (
	"github.com/csconform/csconform/model/invariant"
)

// storageLister is a world that can say which volume files primary storage holds (the storage-leak
// check's truth); a world that cannot leaves the check off.
type storageLister interface {
	volumeFiles() map[string]bool
}

// checkStorageLeaks judges, at the end of a run, the volume rows against primary storage: a row
// Expunged over a file still there is a storage-leak (invariant.CheckStorageLeaks).
func (c *Cluster) checkStorageLeaks() {
	w, ok := c.w.(storageLister)
	if !ok {
		return
	}
	files := w.volumeFiles()
	var vols []invariant.Volume
	for _, v := range c.DB.Volumes(0) {
		vols = append(vols, invVolume(v))
	}
	for _, v := range invariant.CheckStorageLeaks(vols, files, c.Now()) {
		c.report(v)
	}
}

// volumeFiles: the simulator's primary storage is shared by its hosts, so a file is there when some
// host created it and none deleted it.
func (w *simWorld) volumeFiles() map[string]bool {
	var hs []volumeHost
	for _, h := range w.c.HostIDs {
		hs = append(hs, w.hosts[h])
	}
	return sharedStorage(hs)
}

// volumeFiles: the live world's fake hosts, as the simulator's.
func (w *liveWorld) volumeFiles() map[string]bool {
	var hs []volumeHost
	for _, h := range w.c.HostIDs {
		hs = append(hs, w.hosts[h].hv)
	}
	return sharedStorage(hs)
}

type volumeHost interface {
	VolumeFiles() (created, deleted map[string]bool)
}

// sharedStorage is what primary storage shared by hosts holds: the files some host created and none
// deleted.
func sharedStorage(hosts []volumeHost) map[string]bool {
	on, gone := map[string]bool{}, map[string]bool{}
	for _, h := range hosts {
		created, deleted := h.VolumeFiles()
		for p := range created {
			on[p] = true
		}
		for p := range deleted {
			gone[p] = true
		}
	}
	for p := range gone {
		delete(on, p)
	}
	return on
}
