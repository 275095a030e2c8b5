package harness

import "github.com/csconform/csconform/detect"

// storageLister is a world that can say which volume files primary storage holds (the storage-leak
// check's truth); a world that cannot leaves the check off.
type storageLister interface {
	volumeFiles() map[string]bool
}

// storage is what the world's primary storage holds, for detect.StorageLeaks, and the volumes' VMs
// from the records; false when the world cannot list it.
func (c *Cluster) storage() (detect.Storage, bool) {
	w, ok := c.w.(storageLister)
	if !ok {
		return detect.Storage{}, false
	}
	vmOf := map[string]string{}
	for _, v := range c.DB.Volumes(0) {
		iv := invVolume(v)
		vmOf["volume:"+iv.ID] = iv.VMID
	}
	return detect.Storage{Files: w.volumeFiles(), VMOf: func(vol string) string { return vmOf[vol] }}, true
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
