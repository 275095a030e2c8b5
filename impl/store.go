package impl

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// DB is the management server's database: the rows CloudStack keeps in MySQL. It outlives a management
// server restart: in one process (the simulator) as the same object, across processes in its state
// file (OpenDB). Reads return copies (CloudStack's VOs); writes keep CloudStack's semantics where the
// defects depend on them: VM state writes are compare-and-set on update_count, network state writes are
// last-writer-wins on an in-memory copy.
type DB struct {
	mu     coopMutex
	env    Env
	reaper Reaper // env, when it is one (the real worlds)
	sink   history.Sink
	seq    int64

	// Mocks is the simulator database's mockconfiguration table (configureSimulator; simmock.go).
	Mocks SimMocks

	vms       map[int64]*VMVO
	networks  map[int64]*NetworkVO
	nics      map[int64]*NicVO
	ips       map[int64][]*IPVO // per network, in pool order
	volumes   map[int64]*VolumeVO
	hosts     map[string]*HostVO
	jobs      map[int64]*JobVO
	locks     map[string]*LockVO
	mshosts   map[string]*MSHostVO // by msid; memory only: several servers run only in the simulator
	itWork    map[int64]*ItWorkVO  // op_it_work (itwork.go)
	itWorkSeq int64                // its own id sequence: the other tables' ids do not move
	haWork    map[int64]*HaWorkVO  // op_ha_work (hawork.go)
	haWorkSeq int64
	nextID    int64
	// vmSlab is where CreateVM puts new rows, 64 to an array: a host's VMs, deployed together, share
	// cache lines that power sync reads at every report (rows are never freed, so neither are arrays)
	vmSlab  []VMVO
	liveGen uint64 // bumped at each change of the live names (NameHint)
	ix      index  // secondary indexes (index.go)

	disk     *disk       // the state file (nil = memory only); see persist.go
	detached atomic.Bool // a stopping server: commits no longer reach the disk
}

// VMVO is a vm_instance row.
type VMVO struct {
	ID          int64
	Name        string
	Type        string // "User" or "DomainRouter"
	State       vm.State
	HostID      string
	LastHostID  string
	NetworkIDs  []int64
	UpdateCount int64
	UpdateTime  time.Time
	Created     time.Time
	Removed     bool
	// HAEnabled is the offering's offer_ha (vm_instance.ha_enabled): HA restarts the VM.
	HAEnabled bool `json:",omitempty"`
	// HostName and DisplayName are vm_instance's host_name and display_name as deployVirtualMachine was
	// given them (the API face's; empty: none given). Rows, so they survive a restart as the rest does.
	HostName    string `json:",omitempty"`
	DisplayName string `json:",omitempty"`

	PowerState            vm.PowerState
	PowerStateUpdateTime  time.Time
	PowerStateUpdateCount int
	PowerHost             string
}

// NetworkVO is a networks row with its op_networks counters.
type NetworkVO struct {
	ID                int64
	Name              string
	State             network.State
	Created           time.Time
	ImplementingSince time.Time // set on the transition to Implementing (the D1 fix ages from it)
	Persistent        bool
	CIDR              string // e.g. "10.1.1" (a /24)
	RouterID          int64
	NicsCount         int
	CheckForGC        bool
	Removed           bool // deleteNetwork removed the row (the API no longer lists it)
}

// Gateway is the router's address on the network.
func (n *NetworkVO) Gateway() string { return n.CIDR + ".1" }

// NicVO is a nics row.
type NicVO struct {
	ID        int64
	VMID      int64
	NetworkID int64
	IP        string
	MAC       string
	State     string // Allocated, Reserving, Reserved, Releasing, Deallocating
}

// IPVO is one guest address of a network's pool.
type IPVO struct {
	Address string
	NicID   int64 // 0 = free
}

// VolumeVO is a volumes row.
type VolumeVO struct {
	ID      int64
	VMID    int64
	Path    string
	State   string // Allocated, Ready, Destroy, Expunging, Expunged
	Removed bool
}

// HostVO is a host row.
type HostVO struct {
	ID             string
	Status         host.Status
	MSID           string
	LastPinged     time.Time
	DisconnectedOn time.Time
	// ResourceState is the host's resource_state; "" is Enabled.
	ResourceState ResourceState `json:",omitempty"`
}

// JobVO is an async_job row (vm_work_job rows are jobs with a VM instance and a Cmd of VmWork*).
type JobVO struct {
	ID           int64
	Cmd          string
	InstanceType string // "VirtualMachine", "Network", ...
	InstanceID   int64
	Status       job.Status
	ResultCode   int
	Result       string
	MSID         string
	Created      time.Time
	// Completed is when the job finished (AsyncJobManagerImpl.completeAsyncJob sets removed, which
	// the API answers as completed); zero while it runs.
	Completed time.Time `json:",omitzero"`
}

// LockVO is an op_lock row.
type LockVO struct {
	Key     string
	MSID    string
	Thread  string
	Waiters int
	Since   time.Time
}

// NewDB returns an empty database.
func NewDB(env Env, sink history.Sink) *DB {
	db := &DB{mu: coopMutex{env: env, name: "the database's lock"}, env: env, sink: sink,
		vms: map[int64]*VMVO{}, networks: map[int64]*NetworkVO{}, nics: map[int64]*NicVO{},
		ips: map[int64][]*IPVO{}, volumes: map[int64]*VolumeVO{}, hosts: map[string]*HostVO{},
		jobs: map[int64]*JobVO{}, locks: map[string]*LockVO{}, itWork: map[int64]*ItWorkVO{},
		haWork: map[int64]*HaWorkVO{}}
	db.reaper, _ = env.(Reaper)
	db.reindex()
	return db
}

// lock asks the time before taking the lock: a task of a dead process stops there (see the
// simulator's Now; a real world's Reap) instead of reading or writing records.
func (db *DB) lock() {
	db.env.Now()
	if db.reaper != nil {
		db.reaper.Reap()
	}
	db.mu.Lock()
	if db.reaper != nil && db.reaper.Dead() { // killed while it waited (Between)
		db.mu.Unlock()
		runtime.Goexit()
	}
}

func (db *DB) emit(e history.Event) {
	if db.sink == nil {
		return
	}
	db.seq++
	e.Seq = db.seq
	e.Time = db.env.Now()
	db.sink.Emit(e)
}

// Emit records an event on the run's history (log lines, faults, client calls).
func (db *DB) Emit(e history.Event) {
	db.lock()
	defer db.mu.Unlock()
	db.emit(e)
}

func (db *DB) id() int64 { db.nextID++; return db.nextID }

// VMObject, NetworkObject and friends name objects in histories.
// (strconv, not fmt: they name an object in nearly every event.)
func VMObject(id int64) string      { return "vm:" + strconv.FormatInt(id, 10) }
func NetworkObject(id int64) string { return "network:" + strconv.FormatInt(id, 10) }
func HostObject(id string) string   { return "host:" + id }
func JobObject(id int64) string     { return "job:" + strconv.FormatInt(id, 10) }

// ---- vm_instance

// CreateVM inserts a VM row in Stopped.
func (db *DB) CreateVM(actor, name, typ string, networks []int64) *VMVO {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if len(db.vmSlab) == cap(db.vmSlab) {
		db.vmSlab = make([]VMVO, 0, 64)
	}
	db.vmSlab = append(db.vmSlab, VMVO{ID: db.id(), Type: typ, State: vm.Stopped, NetworkIDs: append([]int64(nil), networks...),
		Created: db.env.Now(), UpdateTime: db.env.Now(), PowerState: vm.PowerOff})
	v := &db.vmSlab[len(db.vmSlab)-1]
	if name == "" {
		if typ == "DomainRouter" {
			name = fmt.Sprintf("r-%d-VM", v.ID)
		} else {
			name = fmt.Sprintf("i-2-%d-VM", v.ID)
		}
	}
	v.Name = name
	db.vms[v.ID] = v
	db.indexVM(v)
	db.touch(tVM, v.ID)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: VMObject(v.ID), To: string(vm.Stopped), Detail: "created " + name})
	c := *v
	return &c
}

// VM reads a VM row (nil if missing).
func (db *DB) VM(id int64) *VMVO {
	c, ok := db.vmCopy(id)
	if !ok {
		return nil
	}
	return &c
}

// vmCopy is VM's read. The getters that return a copy are this small so that they inline: a caller
// that only reads the copy keeps it on its stack instead of allocating it (power sync and the agent
// manager read a row per message).
func (db *DB) vmCopy(id int64) (VMVO, bool) {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	v, ok := db.vmRow(id)
	if !ok {
		return VMVO{}, false
	}
	c := *v
	c.NetworkIDs = append([]int64(nil), v.NetworkIDs...)
	return c, true
}

// vmStateNoPoint reads a VM's state with no scheduling point, for VirtualRouterElement.prepare's look
// at the router on every user VM's start (see prepareVirtualRouter); "" if the row is missing.
func (db *DB) vmStateNoPoint(id int64) vm.State {
	db.lock()
	defer db.mu.Unlock()
	v, ok := db.vmRow(id)
	if !ok {
		return ""
	}
	return v.State
}

// networkActiveNicsNoPoint reads a network's active-NIC count (op_networks.nics_count) with no
// scheduling point, for the network GC's look after its DestroyNetwork write (see
// Server.stillFreeForGc), as isNetworkReadyForGc's read is none; -1 if the row is missing.
func (db *DB) networkActiveNicsNoPoint(id int64) int {
	db.lock()
	defer db.mu.Unlock()
	n, ok := db.networks[id]
	if !ok {
		return -1
	}
	return n.NicsCount
}

// rowCopy is the read of Network, Host and Job (see vmCopy): a copy of table's row id. The tables
// are never replaced, only written under db.mu, so passing one in before the lock is safe.
func rowCopy[K comparable, V any](db *DB, table map[K]*V, id K) (V, bool) {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	r, ok := table[id]
	if !ok {
		var zero V
		return zero, false
	}
	return *r, true
}

// VMByName finds a live (not removed) VM by instance name: the one with the lowest id (the vmLive
// index keeps it). Power sync, which asks for each domain of each report, needs only the id
// (VMIDByName).
func (db *DB) VMByName(name string) *VMVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	id, ok := db.ix.vmLive[name]
	if !ok {
		return nil
	}
	c := *db.vms[id]
	return &c
}

// VMIDByName is VMByName for callers that need only the id: the same read and the same scheduling
// point, without copying the row (power sync asks through a hint, VMIDByNameHinted).
func (db *DB) VMIDByName(name string) (int64, bool) { return db.VMIDByNameHinted(name, nil) }

// NameHint remembers one VMIDByName answer for a caller that asks for the same names over and over
// (power sync: every domain of every report of a host). It answers again, without the index's lookup,
// for the same name while no VM has been created, removed or renamed since: the same answer, read at
// the same scheduling point. The zero NameHint holds nothing.
type NameHint struct {
	db   *DB // generations of different DBs (a reload, another server's) say nothing of each other
	name string
	id   int64
	ok   bool
	gen  uint64
}

// VMIDByNameHinted is VMIDByName through h (nil: none).
func (db *DB) VMIDByNameHinted(name string, h *NameHint) (int64, bool) {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	if h != nil && h.db == db && h.gen == db.liveGen && h.name == name {
		return h.id, h.ok
	}
	id, ok := db.ix.vmLive[name]
	if h != nil {
		*h = NameHint{db: db, name: name, id: id, ok: ok, gen: db.liveGen}
	}
	return id, ok
}

// VMStamp is what a VM's last state change left in its row: name, state and update_time.
type VMStamp struct {
	Name       string
	State      vm.State
	UpdateTime time.Time
}

// VMStampOf reads a VM's stamp (false if missing): the same read and scheduling point as VM, without
// copying the row, for the C3 check that power sync runs on every reported VM.
func (db *DB) VMStampOf(id int64) (VMStamp, bool) {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	v, ok := db.vmRow(id)
	if !ok {
		return VMStamp{}, false
	}
	return VMStamp{Name: v.Name, State: v.State, UpdateTime: v.UpdateTime}, true
}

// rows copies the rows of a table that match f (nil: all), in id order: never map order, so every
// caller's decisions replay with the seed.
func rows[K cmp.Ordered, V any](table map[K]*V, f func(*V) bool) []*V {
	var out []*V
	for _, id := range slices.Sorted(maps.Keys(table)) {
		if v := table[id]; f == nil || f(v) {
			c := *v
			out = append(out, &c)
		}
	}
	return out
}

// VMs lists VM rows matching f, by id.
func (db *DB) VMs(f func(*VMVO) bool) []*VMVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	return rowsBy(db.vmRow, db.ix.vmOrder, f)
}

// VMsOnHost lists the VM rows whose host_id is hostID matching f, by id (the host index).
func (db *DB) VMsOnHost(hostID string, f func(*VMVO) bool) []*VMVO {
	db.lock()
	defer db.mu.Unlock()
	return rowsBy(db.vmRow, db.ix.vmByHost[hostID], f)
}

// HostVMs is VMs restricted to host_id hostID through the host index: the same rows in the same
// order at the same scheduling point, without a pass over every VM (a per-ping scan of each host).
func (db *DB) HostVMs(hostID string, f func(*VMVO) bool) []*VMVO {
	point(db.env, PointRead)
	return db.VMsOnHost(hostID, f)
}

// SetHAEnabled sets a VM's ha_enabled (the service offering's offer_ha at deploy).
func (db *DB) SetHAEnabled(id int64, on bool) {
	db.lock()
	defer db.commit()
	if v, ok := db.vmRow(id); ok {
		v.HAEnabled = on
		db.touch(tVM, id)
	}
}

// SetVMNames sets a VM's host_name and display_name (deployVirtualMachine's name and displayname).
func (db *DB) SetVMNames(id int64, hostName, displayName string) {
	db.lock()
	defer db.commit()
	if v, ok := db.vmRow(id); ok {
		v.HostName, v.DisplayName = hostName, displayName
		db.touch(tVM, id)
	}
}

// VMsInNetwork lists the VM rows with a NIC in network nid matching f, by id (the network index).
func (db *DB) VMsInNetwork(nid int64, f func(*VMVO) bool) []*VMVO {
	db.lock()
	defer db.mu.Unlock()
	return rowsBy(db.vmRow, db.ix.vmByNet[nid], f)
}

// UpdateVMState is VMInstanceDaoImpl.updateState: an optimistic write keyed on state, host and
// update_count of the caller's copy. As the Java's VO, the copy takes the new state, host, update_count
// and update_time (and the last host VMMI.stateTransitTo sets) before the UPDATE, whether or not a row
// matches; on no match, true when the row already is in the new state (two transitions to the same
// state both win), else false (no exception, as in CloudStack).
func (db *DB) UpdateVMState(actor string, old *VMVO, ev vm.Event, newState vm.State, newHost string) bool {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	return db.updateVMStateLocked(actor, old, ev, newState, newHost)
}

// UpdateVMStateIfCurrent is C12's fix for changeToStartState: the transition is made only when the row
// is still as the caller's copy has it (state, host and update count, read under the row's lock in the
// same transaction), with none of updateState's leniency for a concurrent writer that already took the
// row to the new state: that writer's start is not this caller's. A row that moved leaves the copy
// untouched and answers false, and changeToStartState looks at the row again ("Determining why").
func (db *DB) UpdateVMStateIfCurrent(actor string, old *VMVO, ev vm.Event, newState vm.State, newHost string) bool {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if row, ok := db.vmRow(old.ID); !ok || row.State != old.State || row.HostID != old.HostID || row.UpdateCount != old.UpdateCount {
		return false
	}
	return db.updateVMStateLocked(actor, old, ev, newState, newHost)
}

// VMTransition is one state change of UpdateVMStates.
type VMTransition struct {
	Event vm.Event
	To    vm.State
}

// UpdateVMStates applies several transitions to one VM row in one transaction (one write point,
// under one lock), each as UpdateVMState does on the same copy, stopping at the first that fails. It
// returns how many took effect (len(steps) when all did), with the earlier ones kept (a caller's
// transaction that cannot fail past its first step, such as VMMI.destroy's DestroyRequested then
// ExpungeOperation).
func (db *DB) UpdateVMStates(actor string, old *VMVO, newHost string, steps ...VMTransition) int {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	for i, st := range steps {
		if !db.updateVMStateLocked(actor, old, st.Event, st.To, newHost) {
			return i
		}
	}
	return len(steps)
}

func (db *DB) updateVMStateLocked(actor string, old *VMVO, ev vm.Event, newState vm.State, newHost string) bool {
	if old.State == newState && old.HostID == newHost && newHost != "" {
		return true // same state and host: no write, update_time not bumped
	}
	if old.State == vm.Stopped && newState == vm.Stopped && old.HostID == "" && newHost == "" {
		return true // ifStateUnchanged: Stopped with no host, and staying so: no write either
	}
	from, oldHost, oldCount := old.State, old.HostID, old.UpdateCount
	// The caller's copy first, as the Java's VO: VMMI.stateTransitTo's setLastHostId, incrUpdated and the
	// UpdateBuilder's sets of state, host_id and update_time all land on it before the UPDATE runs.
	setLast, last := false, ""
	if from == vm.Starting && ev == vm.OperationSucceeded {
		setLast, last = true, newHost
	}
	if newHost == "" && oldHost != "" {
		setLast, last = true, oldHost
	}
	if from == vm.Running && ev == vm.MigrationRequested {
		// VMMI.migrate: vm.setLastHostId(srcHostId) on the VO just before this transition
		setLast, last = true, oldHost
	}
	if setLast {
		old.LastHostID = last
	}
	old.State, old.HostID = newState, newHost
	old.UpdateCount++
	old.UpdateTime = db.env.Now()
	row, ok := db.vmRow(old.ID)
	if !ok {
		return false
	}
	if row.State != from || row.HostID != oldHost || row.UpdateCount != oldCount {
		db.emit(history.Event{Actor: actor, Kind: history.Log, Level: "DEBUG", Object: VMObject(old.ID),
			Detail: fmt.Sprintf("Unable to update %s: DB Data={Host=%s; State=%s; updated=%d} New Data: {Host=%s; State=%s; updated=%d} Stale Data: {Host=%s; State=%s; updated=%d}",
				row.Name, row.HostID, row.State, row.UpdateCount, old.HostID, old.State, old.UpdateCount, oldHost, from, oldCount)})
		if row.State == newState {
			// a concurrent transition already took the row where this one was going: both win
			db.emit(history.Event{Actor: actor, Kind: history.Log, Level: "DEBUG", Object: VMObject(old.ID),
				Detail: fmt.Sprintf("VM %s state has been already been updated to %s", row.Name, newState)})
			return true
		}
		return false
	}
	row.State = newState
	if setLast {
		row.LastHostID = last
	}
	db.moveVM(row.ID, row.HostID, newHost)
	row.HostID = newHost
	row.UpdateCount++
	row.UpdateTime = old.UpdateTime
	db.touch(tVM, row.ID)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: VMObject(row.ID), From: string(from), To: string(newState),
		Detail: fmt.Sprintf("%s %s host=%s", row.Name, ev, newHost)})
	return true
}

// StopVMsOfRemovedHost is doDeleteHost's last sweep, in the transaction that removes the host: every
// VM row still marked on the host is set Stopped with no host (vm.setState(State.Stopped);
// vm.setHostId(null); _vmDao.persist(vm), an UPDATE of the changed columns: no state machine, no
// update_count, its NICs and power columns left as they are). It returns the rows it wrote.
func (db *DB) StopVMsOfRemovedHost(actor, hostID string) []int64 {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	var out []int64
	for _, id := range slices.Clone(db.ix.vmByHost[hostID]) {
		v, ok := db.vmRow(id)
		if !ok || v.Removed || v.HostID != hostID {
			continue
		}
		from := v.State
		db.moveVM(id, hostID, "")
		v.State, v.HostID = vm.Stopped, ""
		db.touch(tVM, id)
		db.emit(history.Event{Actor: actor, Kind: history.State, Object: VMObject(id), From: string(from), To: string(vm.Stopped),
			Detail: fmt.Sprintf("%s setState host=", v.Name), Direct: true})
		out = append(out, id)
	}
	return out
}

// RemoveVM marks an expunged VM's row removed.
func (db *DB) RemoveVM(actor string, id int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if v, ok := db.vmRow(id); ok {
		v.Removed = true
		db.liveName(v.Name)
		db.touch(tVM, id)
		db.emit(history.Event{Actor: actor, Kind: history.State, Object: VMObject(id), From: string(v.State), To: "Expunged", Detail: v.Name + " removed"})
	}
}

// UpdatePowerState is the bulk updatePowerState for one VM: it writes only when the column's last
// update is older than wisdomEra, and counts identical reports up to three (getPowerUpdateCount).
// It returns true when something was written (and so should be published).
func (db *DB) UpdatePowerState(actor string, id int64, ps vm.PowerState, hostID string, wisdomEra time.Time) bool {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	v, ok := db.vmRow(id)
	if !ok {
		return false
	}
	if !v.PowerStateUpdateTime.IsZero() && !v.PowerStateUpdateTime.Before(wisdomEra) {
		return false
	}
	outOfSync := (ps == vm.PowerOff && v.State == vm.Running) || (ps == vm.PowerOn && v.State == vm.Stopped)
	count := v.PowerStateUpdateCount
	switch {
	case ps != v.PowerState || v.PowerHost != hostID || outOfSync:
		count = 1
	case count < 3:
		count++
	default:
		return false
	}
	from := v.PowerState
	v.PowerState, v.PowerHost, v.PowerStateUpdateTime, v.PowerStateUpdateCount = ps, hostID, db.env.Now(), count
	db.touch(tVM, id)
	if from != ps {
		db.emit(history.Event{Actor: actor, Kind: history.Power, Object: VMObject(id), From: string(from), To: string(ps), Detail: v.Name + " on " + hostID})
	}
	return true
}

// SetPowerState writes the power columns directly (sendStop writes PowerOff on success).
func (db *DB) SetPowerState(actor string, id int64, ps vm.PowerState) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if v, ok := db.vmRow(id); ok && v.PowerState != ps {
		db.emit(history.Event{Actor: actor, Kind: history.Power, Object: VMObject(id), From: string(v.PowerState), To: string(ps), Detail: v.Name})
		v.PowerState = ps
		v.PowerStateUpdateTime = db.env.Now()
		v.PowerStateUpdateCount = 1
		db.touch(tVM, id)
	}
}

// ResetVMPowerStateTracking is resetVmPowerStateTracking: count 0, update time now.
func (db *DB) ResetVMPowerStateTracking(id int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if v, ok := db.vmRow(id); ok {
		v.PowerStateUpdateCount = 0
		v.PowerStateUpdateTime = db.env.Now()
		db.touch(tVM, id)
	}
}

// ResetHostPowerStateTracking resets every VM whose power_host is the host.
func (db *DB) ResetHostPowerStateTracking(hostID string) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	for _, id := range db.ix.vmOrder {
		if v := db.vms[id]; v.PowerHost == hostID {
			v.PowerStateUpdateCount = 0
			v.PowerStateUpdateTime = db.env.Now()
			db.touch(tVM, id)
		}
	}
}

// ---- networks

// CreateNetwork is NewNetwork where no error can happen (the simulator's and the tests' few networks).
func (db *DB) CreateNetwork(actor, name string, persistent bool, poolSize int) *NetworkVO {
	n, err := db.NewNetwork(actor, name, persistent, poolSize)
	if err != nil {
		panic(err)
	}
	return n
}

// NewNetwork inserts an Allocated network with a /24 pool of .10–.(10+size-1). It is refused when the
// id sequence is at MaxCounter or every /24 of 10.0.0.0/8 is taken.
func (db *DB) NewNetwork(actor, name string, persistent bool, poolSize int) (*NetworkVO, error) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if db.nextID >= MaxCounter {
		return nil, fmt.Errorf("no network created: the database's ids are used up (NextID %d, the limit is %d)", db.nextID, int64(MaxCounter))
	}
	cidr, ok := db.networkCIDR(db.nextID + 1)
	if !ok {
		return nil, errors.New("no network created: every /24 of 10.0.0.0/8 is held by a network")
	}
	// NetworkDaoImpl.persist(network, gc, …) inserts the op_networks row as NetworkOpVO(id, gc), whose
	// check_for_gc starts as gc; setupNetwork passes gc = (guest type Isolated), which every network
	// here is (a persistent one is left out by the GC's query, by its offering)
	n := &NetworkVO{ID: db.id(), Name: name, State: network.Allocated, Created: db.env.Now(), Persistent: persistent, CIDR: cidr, CheckForGC: true}
	for i := 0; i < poolSize; i++ {
		db.ips[n.ID] = append(db.ips[n.ID], &IPVO{Address: fmt.Sprintf("%s.%d", n.CIDR, 10+i)})
	}
	db.networks[n.ID] = n
	db.ix.netOrder = insertID(db.ix.netOrder, n.ID)
	db.touch(tNetwork, n.ID)
	db.touch(tIPs, n.ID)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: NetworkObject(n.ID), To: string(network.Allocated),
		Detail: fmt.Sprintf("created %s %s.0/24 persistent=%v", name, n.CIDR, persistent)})
	c := *n
	return &c, nil
}

// networkCIDR is the /24 (as "10.a.b") of a new network with id: 10.(1+id/250).(id%250) while that is
// an address and free (ids below 63,750: every network so far, and the simulator's histories), else
// the first /24 of 10.0.0.0/8 no network holds. The caller holds mu; the /24 is taken.
func (db *DB) networkCIDR(id int64) (string, bool) {
	if db.ix.cidrs == nil {
		db.ix.cidrs = map[int]bool{}
	}
	if id < 255*250 {
		if k := int(1+id/250)<<8 | int(id%250); !db.ix.cidrs[k] {
			db.ix.cidrs[k] = true
			return fmt.Sprintf("10.%d.%d", 1+id/250, id%250), true
		}
	}
	for k := db.ix.cidrFree; k < 1<<16; k++ {
		if !db.ix.cidrs[k] {
			db.ix.cidrs[k] = true
			db.ix.cidrFree = k + 1
			return fmt.Sprintf("10.%d.%d", k>>8, k&0xff), true
		}
	}
	db.ix.cidrFree = 1 << 16
	return "", false
}

// cidrKey reads "10.a.b" as a<<8|b.
func cidrKey(c string) (int, bool) {
	var a, b int
	if _, err := fmt.Sscanf(c, "10.%d.%d", &a, &b); err != nil || a < 0 || a > 255 || b < 0 || b > 255 || fmt.Sprintf("10.%d.%d", a, b) != c {
		return 0, false
	}
	return a<<8 | b, true
}

// Network reads a network row (nil if missing).
func (db *DB) Network(id int64) *NetworkVO {
	c, ok := rowCopy(db, db.networks, id)
	if !ok {
		return nil
	}
	return &c
}

// RemoveNetwork marks a network's row removed (the last step of destroyNetwork).
func (db *DB) RemoveNetwork(actor string, id int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if n, ok := db.networks[id]; ok {
		n.Removed = true
		db.touch(tNetwork, id)
		// a log line, not a state write: the row is gone, its state stays as destroyNetwork left it
		db.emit(history.Event{Actor: actor, Kind: history.Log, Level: "DEBUG", Object: NetworkObject(id), Detail: "Removed network " + n.Name})
	}
}

// Networks lists networks matching f, by id.
func (db *DB) Networks(f func(*NetworkVO) bool) []*NetworkVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.networks, db.ix.netOrder, f)
}

// UpdateNetworkState is NetworkDaoImpl.updateState: the transition is validated against the caller's
// in-memory copy and the row is overwritten by id — not a compare-and-set (spec 2.2), so the last
// writer wins. direct marks a state set around the state machine (setState + update).
func (db *DB) UpdateNetworkState(actor string, n *NetworkVO, to network.State, why string, direct bool) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	row, ok := db.networks[n.ID]
	if !ok {
		return
	}
	from := row.State
	if to == network.Implementing {
		row.ImplementingSince = db.env.Now()
	}
	row.State = to
	db.touch(tNetwork, n.ID)
	n.State = to
	n.ImplementingSince = row.ImplementingSince
	holder := ""
	if l, ok := db.locks[NetworkLockKey(n.ID)]; ok {
		holder = l.Thread
	}
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: NetworkObject(n.ID), From: string(from), To: string(to),
		Detail: why, LockHolder: holder, Direct: direct})
}

// SetNetworkCreated backdates (or moves) a network's creation time.
func (db *DB) SetNetworkCreated(id int64, t time.Time) error {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	n, ok := db.networks[id]
	if !ok {
		return fmt.Errorf("network %d does not exist", id)
	}
	n.Created = t
	db.touch(tNetwork, id)
	return nil
}

// SetNetworkRouter records the network's virtual router.
func (db *DB) SetNetworkRouter(id, routerID int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	db.networks[id].RouterID = routerID
	db.touch(tNetwork, id)
}

// ChangeActiveNicsBy is changeActiveNicsBy plus setCheckForGc.
func (db *DB) ChangeActiveNicsBy(id int64, d int) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	n := db.networks[id]
	n.NicsCount += d
	n.CheckForGC = true
	db.touch(tNetwork, id)
}

// SetCheckForGC is setCheckForGc (NetworkOpDaoImpl): updateNic's for a router's Guest NIC. Setting a
// flag already set changes nothing, so it is no scheduling point then.
func (db *DB) SetCheckForGC(id int64) {
	db.lock()
	n := db.networks[id]
	set := n == nil || n.CheckForGC
	db.mu.Unlock()
	if set {
		return
	}
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	db.networks[id].CheckForGC = true
	db.touch(tNetwork, id)
}

// ClearCheckForGC is clearCheckForGc.
func (db *DB) ClearCheckForGC(id int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	db.networks[id].CheckForGC = false
	db.touch(tNetwork, id)
}

// ---- nics and the IP pool

// CreateNic inserts an Allocated NIC (no address yet: a Start-strategy NIC gets one at reserve).
func (db *DB) CreateNic(vmID, networkID int64) *NicVO {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	n := &NicVO{ID: db.id(), VMID: vmID, NetworkID: networkID, State: "Allocated"}
	n.MAC = fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", byte(networkID>>8), byte(networkID), byte(n.ID>>8), byte(n.ID))
	db.nics[n.ID] = n
	db.indexNic(n)
	db.touch(tNic, n.ID)
	c := *n
	return &c
}

// Nics lists a VM's NICs, by id.
func (db *DB) Nics(vmID int64) []*NicVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.nics, db.ix.nicByVM[vmID], nil)
}

// SetNicState writes a NIC's state.
func (db *DB) SetNicState(id int64, state string) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if n, ok := db.nics[id]; ok {
		n.State = state
		db.touch(tNic, id)
	}
}

// ReserveIP gives the NIC the lowest free address of its network ("" if the pool is empty). A NIC that
// already holds one keeps it.
func (db *DB) ReserveIP(actor string, nicID int64) string {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	nic := db.nics[nicID]
	for _, ip := range db.ips[nic.NetworkID] {
		if ip.NicID == nicID {
			return ip.Address
		}
	}
	for _, ip := range db.ips[nic.NetworkID] {
		if ip.NicID == 0 {
			ip.NicID = nicID
			nic.IP = ip.Address
			db.touch(tIPs, nic.NetworkID)
			db.touch(tNic, nicID)
			db.emit(history.Event{Actor: actor, Kind: history.IP, Object: "ip:" + ip.Address, From: "free", To: VMObject(nic.VMID)})
			return ip.Address
		}
	}
	return ""
}

// ReleaseIP returns the NIC's address to the pool.
func (db *DB) ReleaseIP(actor string, nicID int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	nic, ok := db.nics[nicID]
	if !ok {
		return
	}
	db.touch(tIPs, nic.NetworkID)
	db.touch(tNic, nicID)
	for _, ip := range db.ips[nic.NetworkID] {
		if ip.NicID == nicID {
			ip.NicID = 0
			db.emit(history.Event{Actor: actor, Kind: history.IP, Object: "ip:" + ip.Address, From: VMObject(nic.VMID), To: "free"})
		}
	}
	nic.IP = ""
}

// RemoveNic deletes a NIC row.
func (db *DB) RemoveNic(id int64) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if n, ok := db.nics[id]; ok {
		db.unindexNic(n)
		db.ix.note(tIPs, n.NetworkID) // the pool no longer names the VM of an address the NIC held
	}
	delete(db.nics, id)
	db.touch(tNic, id)
}

// IPPool lists a network's pool with the holder VM id (0 = free).
func (db *DB) IPPool(networkID int64) []IPHolder {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	var out []IPHolder
	for _, ip := range db.ips[networkID] {
		h := IPHolder{Address: ip.Address}
		if ip.NicID != 0 {
			if nic, ok := db.nics[ip.NicID]; ok {
				h.VMID = nic.VMID
			}
		}
		out = append(out, h)
	}
	return out
}

// IPHolder is one pool address and the VM holding it.
type IPHolder struct {
	Address string
	VMID    int64
}

// ---- volumes

// CreateVolume inserts an Allocated ROOT volume for a VM.
func (db *DB) CreateVolume(actor string, vmID int64) *VolumeVO {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	v := &VolumeVO{ID: db.id(), VMID: vmID, State: "Allocated"}
	v.Path = fmt.Sprintf("/primary/ROOT-%d-%d.qcow2", vmID, v.ID)
	db.volumes[v.ID] = v
	db.indexVolume(v)
	db.touch(tVolume, v.ID)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: fmt.Sprintf("volume:%d", v.ID), To: "Allocated", Detail: v.Path})
	c := *v
	return &c
}

// Volumes lists a VM's volumes, removed ones included (vmID 0: every volume).
func (db *DB) Volumes(vmID int64) []*VolumeVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	if vmID == 0 {
		return rowsOf(db.volumes, db.ix.volOrder, nil)
	}
	return rowsOf(db.volumes, db.ix.volByVM[vmID], nil)
}

// SetVolumeState writes a volume's state; "Expunged" also marks it removed.
func (db *DB) SetVolumeState(actor string, id int64, state string) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	v, ok := db.volumes[id]
	if !ok || v.State == state {
		return
	}
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: fmt.Sprintf("volume:%d", id), From: v.State, To: state, Detail: v.Path})
	v.State = state
	db.touch(tVolume, id)
	if state == "Expunged" {
		v.Removed = true
	}
}

// ---- hosts

// Host reads a host row (nil if missing).
func (db *DB) Host(id string) *HostVO {
	c, ok := rowCopy(db, db.hosts, id)
	if !ok {
		return nil
	}
	return &c
}

// Hosts lists hosts by id.
// IDsAfter lists the ids above after of the rows of table ("vm", "network" or "job"), in order: what
// the API's UUID map has not seen yet, found by a binary search in the table's id order rather than a
// copy of every row.
func (db *DB) IDsAfter(table string, after int64) []int64 {
	db.lock()
	defer db.mu.Unlock()
	var order []int64
	switch table {
	case "vm":
		order = db.ix.vmOrder
	case "network":
		order = db.ix.netOrder
	case "job":
		order = db.ix.jobOrder
	default:
		panic("IDsAfter: no table " + table)
	}
	i, found := slices.BinarySearch(order, after)
	if found {
		i++
	}
	return slices.Clone(order[i:])
}

// HostCount is the number of host rows (they are never deleted).
func (db *DB) HostCount() int {
	db.lock()
	defer db.mu.Unlock()
	return len(db.hosts)
}

func (db *DB) Hosts() []*HostVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	return rows(db.hosts, nil)
}

// HostTransit applies a host status event (HostDaoImpl.updateState); false when the state machine
// refuses it. A status that lost the connection clears the owner; otherwise msID, when given, becomes
// the owner (the VO's mgmt_server_id the caller set, as agentStatusTransitTo does). The update's
// check of the owner and the last ping (checkManagementServer) is not modelled.
func (db *DB) HostTransit(actor, id string, ev host.Event, msID string) (host.Status, bool) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	h, ok := db.hosts[id]
	if !ok {
		h = &HostVO{ID: id}
		db.hosts[id] = h
	}
	db.touchKey(tHost, id)
	to, ok := host.Next(h.Status, ev)
	if !ok {
		return h.Status, false
	}
	from := h.Status
	if to != from && to.LostConnection() {
		h.DisconnectedOn = db.env.Now()
	}
	h.Status = to
	// A row that leaves the status as it was (Up -Ping-> Up) is still written and its listeners
	// fired: HostDaoImpl.updateState updates the row whatever the status, so the history has it too.
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: HostObject(id), From: string(from), To: string(to), Detail: string(ev)})
	switch {
	case to.UpdateManagementServer() && to.LostConnection():
		// HostDaoImpl.updateState: a status that lost the connection (Disconnected, Alert, Down,
		// Removed, Error, Rebalancing) sets mgmt_server_id to null
		h.MSID = ""
	case msID != "":
		h.MSID = msID
	}
	return to, true
}

// MarkHostsAsDisconnected is HostDaoImpl.markHostsAsDisconnected(msid, lastPing): the hosts a
// server owned become Disconnected with no owner, by a direct UPDATE (not the host state machine),
// so that another server can take them. It returns the hosts it changed.
func (db *DB) MarkHostsAsDisconnected(actor, msID string, lastPing time.Time) []string {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	var changed []string
	for _, id := range slices.Sorted(maps.Keys(db.hosts)) {
		h := db.hosts[id]
		if h.MSID != msID {
			continue
		}
		from := h.Status
		h.Status, h.MSID, h.LastPinged, h.DisconnectedOn = host.Disconnected, "", lastPing, db.env.Now()
		db.touchKey(tHost, id)
		changed = append(changed, id)
		if from != host.Disconnected {
			db.emit(history.Event{Actor: actor, Kind: history.State, Object: HostObject(id), From: string(from), To: string(host.Disconnected), Detail: "markHostsAsDisconnected " + msID, Direct: true})
		}
	}
	return changed
}

// SetLastPinged records a ping.
func (db *DB) SetLastPinged(id string, t time.Time) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	if h, ok := db.hosts[id]; ok {
		h.LastPinged = t
		db.touchKey(tHost, id)
	}
}

// SetHostResourceState sets a host's resource_state (updateHost allocationstate / maintenance).
func (db *DB) SetHostResourceState(id string, rs ResourceState) {
	db.lock()
	defer db.commit()
	if h, ok := db.hosts[id]; ok {
		h.ResourceState = rs
		db.touchKey(tHost, id)
	}
}

// ---- async jobs

// CreateJob inserts an IN_PROGRESS job.
func (db *DB) CreateJob(actor, cmd, instanceType string, instanceID int64, msID string) *JobVO {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	j := &JobVO{ID: db.id(), Cmd: cmd, InstanceType: instanceType, InstanceID: instanceID, Status: job.InProgress, MSID: msID, Created: db.env.Now()}
	db.jobs[j.ID] = j
	db.indexJob(j)
	db.touch(tJob, j.ID)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: JobObject(j.ID), To: string(job.InProgress),
		Detail: fmt.Sprintf("%s %s:%d", cmd, instanceType, instanceID)})
	c := *j
	return &c
}

// CompleteJob finishes a job (no-op when already done).
func (db *DB) CompleteJob(actor string, id int64, st job.Status, code int, result string) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	j, ok := db.jobs[id]
	if !ok || j.Status.Done() {
		return
	}
	j.Status, j.ResultCode, j.Result, j.Completed = st, code, result, db.env.Now()
	db.ix.jobLive = removeID(db.ix.jobLive, id)
	db.touch(tJob, id)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: JobObject(id), From: string(job.InProgress), To: string(st), Detail: result})
}

// ExpungeJob deletes a job row (AsyncJobManagerImpl.expungeAsyncJob: the async_job row and its
// vm_work_job row).
func (db *DB) ExpungeJob(actor string, id int64) {
	db.lock()
	defer db.commit()
	j, ok := db.jobs[id]
	if !ok {
		return
	}
	delete(db.jobs, id)
	db.ix.jobLive = removeID(db.ix.jobLive, id)
	db.touch(tJob, id)
	db.emit(history.Event{Actor: actor, Kind: history.State, Object: JobObject(id), From: string(j.Status), To: "Expunged", Detail: j.Cmd})
}

// Job reads a job row.
func (db *DB) Job(id int64) *JobVO {
	c, ok := rowCopy(db, db.jobs, id)
	if !ok {
		return nil
	}
	return &c
}

// Jobs lists jobs matching f, by id.
func (db *DB) Jobs(f func(*JobVO) bool) []*JobVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.jobs, db.ix.jobOrder, f)
}

// JobsInProgress is Jobs over the IN_PROGRESS jobs only (the index of live jobs): the same rows in
// the same order at the same scheduling point, without a pass over every job the run made.
func (db *DB) JobsInProgress(f func(*JobVO) bool) []*JobVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.jobs, db.ix.jobLive, f)
}

// JobsFor lists the jobs of one object (instance_type, instance_id) matching f, by id (the index
// async_job has on them).
func (db *DB) JobsFor(instanceType string, instanceID int64, f func(*JobVO) bool) []*JobVO {
	db.lock()
	defer db.mu.Unlock()
	return rowsOf(db.jobs, db.ix.jobByObj[jobObject{instanceType, instanceID}], f)
}

// ---- op_lock

// NetworkLockKey is the lock-table key of a network row.
func NetworkLockKey(id int64) string { return fmt.Sprintf("networks%d", id) }

// TryLock inserts or re-enters a lock row; false if another owner holds it.
func (db *DB) TryLock(key, msID, thread string) bool {
	point(db.env, PointLock)
	db.lock()
	defer db.commit()
	l, ok := db.locks[key]
	if ok {
		if l.MSID == msID && l.Thread == thread {
			l.Waiters++
			db.touchKey(tLock, key)
			return true
		}
		return false
	}
	db.locks[key] = &LockVO{Key: key, MSID: msID, Thread: thread, Waiters: 1, Since: db.env.Now()}
	db.touchKey(tLock, key)
	db.emit(history.Event{Actor: thread, Kind: history.Lock, Object: key, To: "held"})
	return true
}

// Unlock decrements a lock row's count and deletes it at zero.
func (db *DB) Unlock(key, msID, thread string) {
	point(db.env, PointUnlock)
	db.lock()
	defer db.commit()
	l, ok := db.locks[key]
	if !ok || l.MSID != msID || l.Thread != thread {
		return
	}
	l.Waiters--
	db.touchKey(tLock, key)
	if l.Waiters <= 0 {
		delete(db.locks, key)
		db.emit(history.Event{Actor: thread, Kind: history.Lock, Object: key, From: "held", To: "released"})
	}
}

// LockHolder names the thread holding key ("" if free).
func (db *DB) LockHolder(key string) string {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	if l, ok := db.locks[key]; ok {
		return l.Thread
	}
	return ""
}

// Locks lists the lock rows by key.
func (db *DB) Locks() []LockVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	var out []LockVO
	for _, l := range db.locks {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// CleanupLocksForServer is Merovingian2.cleanupForServer: a restarting server drops its own rows.
// Each is released in the history in its holder's name, as if the dead thread had let go: the new
// incarnation numbers its threads from 1 again, and without the release a thread of the same name
// taking the lock would continue the dead one's hold in the checker's eyes.
func (db *DB) CleanupLocksForServer(msID string) {
	point(db.env, PointWrite)
	db.lock()
	defer db.commit()
	for _, k := range slices.Sorted(maps.Keys(db.locks)) {
		if l := db.locks[k]; l.MSID == msID {
			delete(db.locks, k)
			db.touchKey(tLock, k)
			db.emit(history.Event{Actor: l.Thread, Kind: history.Lock, Object: k, From: "held", To: "released",
				Detail: "released by the restart of its server (cleanupForServer)"})
		}
	}
}

// VMByNameAny finds the newest (highest id) VM row with an instance name, removed or not.
func (db *DB) VMByNameAny(name string) *VMVO {
	point(db.env, PointRead)
	db.lock()
	defer db.mu.Unlock()
	var found *VMVO
	if rs := db.ix.vmByName[name]; len(rs) > 0 {
		found = rs[len(rs)-1]
	}
	if found == nil {
		return nil
	}
	c := *found
	return &c
}

// Between runs fn between two of the database's accesses: a real world kills a process there, so that
// a task of it that passed its Reap while it lived and waits for the database finds it dead once it
// gets it (lock), instead of writing after the kill.
func (db *DB) Between(fn func()) {
	db.mu.Lock()
	defer db.mu.Unlock()
	fn()
}
