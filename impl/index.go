package impl

import (
	"cmp"
	"maps"
	"slices"

	"github.com/csconform/csconform/model/job"
)

// index holds the DB's secondary indexes, where CloudStack's schema has them (vm_instance by
// instance name, host and network; nics by instance; volumes by instance; async_job by instance),
// and each table's ids in order, so that a listing never sorts the table. Every list is sorted by
// id: a lookup answers what a scan in id order did.
type index struct {
	vmOrder, netOrder, nicOrder, volOrder, jobOrder []int64

	// vmRows is vm_instance by id, in a slice: power sync reads two or three rows per reported domain,
	// and a host's VMs, created together, sit together here (a map spreads them over its groups)
	vmRows []*VMVO

	vmByName map[string][]*VMVO // the rows themselves, by id
	// vmLive is VMIDByName's answer, kept as rows are created and removed: power sync asks for every
	// domain of every report, and a lookup that reached into the rows missed the cache at thousands of VMs
	vmLive     map[string]int64
	vmByHost   map[string][]int64 // host_id
	vmByNet    map[int64][]int64  // the networks of its NICs at creation
	nicByVM    map[int64][]int64
	volByVM    map[int64][]int64
	jobByObj   map[jobObject][]int64
	itWorkByVM map[int64][]int64 // op_it_work rows by instance_id
	haWorkByVM map[int64][]int64 // op_ha_work rows by instance_id
	jobLive    []int64           // IN_PROGRESS jobs: the job GC's expiry and a restart's clean-up read only these
	cidrs      map[int]bool      // the /24s networks hold, 10.a.b as a<<8|b (networkCIDR)
	cidrFree   int               // no /24 below this is free (networks are never deleted)
	watching   bool
	changedSet map[rowRef]struct{} // rows written since the last TakeChanges (when watching)
}

type jobObject struct {
	typ string
	id  int64
}

// insertID adds id to a sorted list (ids are handed out in order, so it is almost always an append).
func insertID(s []int64, id int64) []int64 {
	if n := len(s); n == 0 || s[n-1] < id {
		return append(s, id)
	}
	i, found := slices.BinarySearch(s, id)
	if found {
		return s
	}
	return slices.Insert(s, i, id)
}

func removeID(s []int64, id int64) []int64 {
	if i, found := slices.BinarySearch(s, id); found {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// reindex rebuilds every index from the tables (after a load from the state file).
func (db *DB) reindex() {
	db.liveGen++
	watching, changed := db.ix.watching, db.ix.changedSet
	db.ix = index{vmByName: map[string][]*VMVO{}, vmLive: map[string]int64{}, vmByHost: map[string][]int64{}, vmByNet: map[int64][]int64{},
		nicByVM: map[int64][]int64{}, volByVM: map[int64][]int64{}, jobByObj: map[jobObject][]int64{},
		itWorkByVM: map[int64][]int64{}, haWorkByVM: map[int64][]int64{}, watching: watching, changedSet: changed}
	for _, id := range slices.Sorted(maps.Keys(db.vms)) {
		db.indexVM(db.vms[id])
	}
	db.ix.netOrder = slices.Sorted(maps.Keys(db.networks))
	db.ix.cidrs = map[int]bool{}
	for _, n := range db.networks {
		if k, ok := cidrKey(n.CIDR); ok {
			db.ix.cidrs[k] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(db.nics)) {
		db.indexNic(db.nics[id])
	}
	for _, id := range slices.Sorted(maps.Keys(db.volumes)) {
		db.indexVolume(db.volumes[id])
	}
	for _, id := range slices.Sorted(maps.Keys(db.jobs)) {
		db.indexJob(db.jobs[id])
	}
	db.itWorkSeq = 0
	for _, id := range slices.Sorted(maps.Keys(db.itWork)) {
		w := db.itWork[id]
		db.ix.itWorkByVM[w.InstanceID] = append(db.ix.itWorkByVM[w.InstanceID], id)
		db.itWorkSeq = id // rows are never deleted: the highest id is the sequence
	}
	db.haWorkSeq = 0
	for _, id := range slices.Sorted(maps.Keys(db.haWork)) {
		w := db.haWork[id]
		db.ix.haWorkByVM[w.VMID] = append(db.ix.haWorkByVM[w.VMID], id)
		db.haWorkSeq = id // nor are these
	}
}

func (db *DB) indexVM(v *VMVO) {
	db.ix.vmOrder = insertID(db.ix.vmOrder, v.ID)
	if v.ID < maxDenseVMID {
		if n := int(v.ID) + 1; n > len(db.ix.vmRows) {
			db.ix.vmRows = slices.Grow(db.ix.vmRows, n-len(db.ix.vmRows))[:n]
		}
		db.ix.vmRows[v.ID] = v
	}
	byName := db.ix.vmByName[v.Name]
	i, found := slices.BinarySearchFunc(byName, v.ID, func(r *VMVO, id int64) int { return cmp.Compare(r.ID, id) })
	if !found {
		db.ix.vmByName[v.Name] = slices.Insert(byName, i, v)
	}
	db.liveName(v.Name)
	if v.HostID != "" {
		db.ix.vmByHost[v.HostID] = insertID(db.ix.vmByHost[v.HostID], v.ID)
	}
	for _, n := range v.NetworkIDs {
		db.ix.vmByNet[n] = insertID(db.ix.vmByNet[n], v.ID)
	}
}

// maxDenseVMID bounds vmRows: a state file may hold any id, and a slice as long as the largest would
// not fit in memory; rows above it are looked up in the table.
const maxDenseVMID = 1 << 22

// vmRow is db.vms[id], through vmRows.
func (db *DB) vmRow(id int64) (*VMVO, bool) {
	switch {
	case id >= maxDenseVMID:
		v, ok := db.vms[id]
		return v, ok
	case id < 0 || id >= int64(len(db.ix.vmRows)) || db.ix.vmRows[id] == nil:
		return nil, false
	}
	return db.ix.vmRows[id], true
}

// liveName keeps vmLive for a name: the lowest id among its rows not removed.
func (db *DB) liveName(name string) {
	db.liveGen++
	for _, r := range db.ix.vmByName[name] {
		if !r.Removed {
			db.ix.vmLive[name] = r.ID
			return
		}
	}
	delete(db.ix.vmLive, name)
}

// moveVM keeps the host index when a VM's host_id changes.
func (db *DB) moveVM(id int64, from, to string) {
	if from == to {
		return
	}
	if from != "" {
		db.ix.vmByHost[from] = removeID(db.ix.vmByHost[from], id)
	}
	if to != "" {
		db.ix.vmByHost[to] = insertID(db.ix.vmByHost[to], id)
	}
}

func (db *DB) indexNic(n *NicVO) {
	db.ix.nicOrder = insertID(db.ix.nicOrder, n.ID)
	db.ix.nicByVM[n.VMID] = insertID(db.ix.nicByVM[n.VMID], n.ID)
}

func (db *DB) unindexNic(n *NicVO) {
	db.ix.nicOrder = removeID(db.ix.nicOrder, n.ID)
	db.ix.nicByVM[n.VMID] = removeID(db.ix.nicByVM[n.VMID], n.ID)
}

func (db *DB) indexVolume(v *VolumeVO) {
	db.ix.volOrder = insertID(db.ix.volOrder, v.ID)
	db.ix.volByVM[v.VMID] = insertID(db.ix.volByVM[v.VMID], v.ID)
}

func (db *DB) indexJob(j *JobVO) {
	db.ix.jobOrder = insertID(db.ix.jobOrder, j.ID)
	k := jobObject{j.InstanceType, j.InstanceID}
	db.ix.jobByObj[k] = insertID(db.ix.jobByObj[k], j.ID)
	if j.Status == job.InProgress {
		db.ix.jobLive = insertID(db.ix.jobLive, j.ID)
	}
}

// rowsOf copies the rows of ids (in the order given) that match f (nil: all).
func rowsOf[V any](table map[int64]*V, ids []int64, f func(*V) bool) []*V {
	return rowsBy(func(id int64) (*V, bool) { v, ok := table[id]; return v, ok }, ids, f)
}

// rowsBy is rowsOf with rows found by get (vm_instance's through vmRow).
func rowsBy[V any](get func(int64) (*V, bool), ids []int64, f func(*V) bool) []*V {
	var out []*V
	for _, id := range ids {
		if v, ok := get(id); ok && (f == nil || f(v)) {
			c := *v
			out = append(out, &c)
		}
	}
	return out
}

// note marks a row changed for a watcher only (a change the state file need not write).
func (ix *index) note(table byte, id int64) {
	if ix.watching {
		ix.changedSet[rowRef{table: table, id: id}] = struct{}{}
	}
}

// Volume reads a volume row (nil if missing).
func (db *DB) Volume(id int64) *VolumeVO {
	db.lock()
	defer db.mu.Unlock()
	v, ok := db.volumes[id]
	if !ok {
		return nil
	}
	c := *v
	return &c
}

// Changes are the rows written since the last TakeChanges, by table, each list sorted.
type Changes struct {
	VMs, Networks, Nics, Volumes, Jobs []int64
	IPPools                            []int64 // networks whose address pool changed
	Hosts, Locks                       []string
}

// Empty says whether nothing was written.
func (c Changes) Empty() bool {
	return len(c.VMs)+len(c.Networks)+len(c.Nics)+len(c.Volumes)+len(c.Jobs)+len(c.IPPools)+len(c.Hosts)+len(c.Locks) == 0
}

// Watch makes the DB remember which rows each write touches, for TakeChanges: an incremental
// checker re-reads only those.
func (db *DB) Watch() {
	db.lock()
	defer db.mu.Unlock()
	db.ix.watching = true
	if db.ix.changedSet == nil {
		db.ix.changedSet = map[rowRef]struct{}{}
	}
}

// TakeChanges returns the rows written since the last call (nothing unless Watch was called).
func (db *DB) TakeChanges() Changes {
	db.mu.Lock() // no scheduling point: the checker runs between two steps
	defer db.mu.Unlock()
	var c Changes
	for r := range db.ix.changedSet {
		switch r.table {
		case tVM:
			c.VMs = append(c.VMs, r.id)
		case tNetwork:
			c.Networks = append(c.Networks, r.id)
		case tNic:
			c.Nics = append(c.Nics, r.id)
		case tIPs:
			c.IPPools = append(c.IPPools, r.id)
		case tVolume:
			c.Volumes = append(c.Volumes, r.id)
		case tHost:
			c.Hosts = append(c.Hosts, r.key)
		case tJob:
			c.Jobs = append(c.Jobs, r.id)
		case tLock:
			c.Locks = append(c.Locks, r.key)
		case tHaWork: // an HA item can change how long its VM may be a ghost (the checker's detect.HaRestartHolds)
			if w := db.haWork[r.id]; w != nil {
				c.VMs = append(c.VMs, w.VMID)
			}
		}
	}
	clear(db.ix.changedSet)
	for _, l := range [][]int64{c.VMs, c.Networks, c.Nics, c.IPPools, c.Volumes, c.Jobs} {
		slices.Sort(l)
	}
	c.VMs = slices.Compact(c.VMs)
	slices.Sort(c.Hosts)
	slices.Sort(c.Locks)
	return c
}
