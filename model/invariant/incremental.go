package invariant

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/csconform/csconform/model/host"
)

// Incremental is a Tracker that re-judges only what changed: the caller hands it the rows and the
// hosts' domains that changed since the last check (Set*), and Check re-runs each invariant on the
// objects those changes reach — a running domain (orphan-domain, ip-conflict, volume-in-use), an
// address (ip-conflict between domains), a VM record (network-outage, ghost-record) — keeping the
// other objects' verdicts. Check answers what Tracker.Check answers on the whole snapshot: the same
// violations in the same order (the harness can run both and compare).
type Incremental struct {
	vms      map[string]VM
	byName   map[string][]string // record ids by name, sorted as recordsByName sorts them
	byHost   map[string]set[string]
	byNet    map[string]set[string] // VM ids with a NIC in the network
	routerOf map[string]set[string] // router VM id → networks whose router it is
	hosts    map[string]Host
	settled  map[string]bool
	networks map[string]Network
	pools    map[string][]IP // by network, in pool order
	byAddr   map[string][]IP // sorted by network, as CheckIPs sorts them
	volumes  map[string]Volume
	byPath   map[string][]string // volume ids, sorted
	domains  map[string]map[string]Domain
	runs     map[string]set[string] // domain name → hosts running it
	domsAt   map[string]set[domKey] // address → running domains using it
	domsOn   map[string]set[domKey] // disk path → running domains holding it
	faulted  set[string]
	ops      []ClientOp
	faults   []Fault
	writes   []NetworkChange // every network write so far (Snapshot.NetworkWrites)
	vmWrites []VMChange      // every VM write so far (Snapshot.VMWrites)
	// the start-failure check reads only the failed starts (a deploy of thousands of VMs would
	// otherwise scan every op at each op's call and return): opsSeen ops were looked at, opsOpen are
	// the indexes of those not returned yet, failedStarts those that returned a failed start, in order
	opsSeen      int
	opsOpen      []int
	failedStarts []int
	// migrations: the indexes of the migrate ops whose handover has not ended for good (Handovers);
	// handing: the handovers at the last Advance, with the grace it used
	migrations []int
	handing    Handovers
	handGrace  time.Duration

	// verdicts kept per object
	domV   map[domKey][]Violation
	addrV  map[string]Violation
	vmV    map[string][]Violation
	ghosts map[string]*ghost // VM id → the ghost condition it holds
	startV []Violation

	dirtyDom   set[domKey]
	dirtyAddr  set[string]
	dirtyVM    set[string]
	dirtyStart bool
	grace      time.Duration
	ghostOn    bool
	// the hosts' settledness is judged again when the host rows change, the grace changes, or time
	// reaches nextSettle (when the next host back Up has had its grace): not at every check
	hostsMoved bool
	nextSettle time.Time

	// Changed* are what the last updates reached, for an observer that also looks only at what
	// changed: VM records written, domain names started or stopped somewhere, addresses whose users
	// or pool entries changed. The caller clears them (ClearChanged).
	ChangedVMs   set[string]
	ChangedNames set[string]
	ChangedAddrs set[string]
}

type set[K comparable] map[K]struct{}

func (s set[K]) add(k K) { s[k] = struct{}{} }

// add puts k in the set at m[key], making the set if needed.
func addTo[K, V comparable](m map[K]set[V], key K, v V) {
	if m[key] == nil {
		m[key] = set[V]{}
	}
	m[key].add(v)
}

func removeFrom[K, V comparable](m map[K]set[V], key K, v V) {
	if s := m[key]; s != nil {
		delete(s, v)
		if len(s) == 0 {
			delete(m, key)
		}
	}
}

type domKey struct{ host, name string }

type ghost struct {
	key   string
	why   string
	v     VM
	since time.Time
}

// NewIncremental returns a checker of an empty world.
func NewIncremental() *Incremental {
	in := &Incremental{}
	in.reset()
	in.ghosts = map[string]*ghost{}
	return in
}

func (in *Incremental) reset() {
	in.vms, in.byName, in.byHost, in.byNet, in.routerOf = map[string]VM{}, map[string][]string{}, map[string]set[string]{}, map[string]set[string]{}, map[string]set[string]{}
	in.hosts, in.settled, in.networks = map[string]Host{}, map[string]bool{}, map[string]Network{}
	in.pools, in.byAddr, in.volumes, in.byPath = map[string][]IP{}, map[string][]IP{}, map[string]Volume{}, map[string][]string{}
	in.domains, in.runs, in.domsAt, in.domsOn = map[string]map[string]Domain{}, map[string]set[string]{}, map[string]set[domKey]{}, map[string]set[domKey]{}
	in.faulted, in.ops, in.faults, in.writes, in.vmWrites = set[string]{}, nil, nil, nil, nil
	in.opsSeen, in.opsOpen, in.failedStarts = 0, nil, nil
	in.migrations, in.handing = nil, nil
	in.domV, in.addrV, in.vmV, in.startV = map[domKey][]Violation{}, map[string]Violation{}, map[string][]Violation{}, nil
	in.dirtyDom, in.dirtyAddr, in.dirtyVM, in.dirtyStart = set[domKey]{}, set[string]{}, set[string]{}, true
	in.ClearChanged()
}

// ClearChanged forgets what the updates so far reached.
func (in *Incremental) ClearChanged() {
	in.ChangedVMs, in.ChangedNames, in.ChangedAddrs = set[string]{}, set[string]{}, set[string]{}
}

// Load replaces the world with a whole snapshot and re-judges every object (a full check); the
// ghost conditions' ages carry over, as a Tracker's do.
func (in *Incremental) Load(s Snapshot) {
	in.reset()
	for _, v := range s.VMs {
		in.SetVM(v)
	}
	in.SetHosts(s.Hosts)
	for _, n := range s.Networks {
		in.SetNetwork(n)
	}
	pools := map[string][]IP{}
	var order []string
	for _, ip := range s.IPs {
		if _, ok := pools[ip.NetworkID]; !ok {
			order = append(order, ip.NetworkID)
		}
		pools[ip.NetworkID] = append(pools[ip.NetworkID], ip)
	}
	for _, n := range order {
		in.SetPool(n, pools[n])
	}
	for _, v := range s.Volumes {
		in.SetVolume(v)
	}
	byHost := map[string][]Domain{}
	for _, d := range s.Domains {
		byHost[d.HostID] = append(byHost[d.HostID], d)
	}
	for h, ds := range byHost {
		in.SetDomains(h, ds)
	}
	in.SetFaults(s.Faults)
	in.SetOps(s.Ops)
	in.SetNetworkWrites(s.NetworkWrites)
	in.SetVMWrites(s.VMWrites)
	for id := range in.vms {
		in.dirtyVM.add(id)
	}
}

// markVM re-judges a record, and the VMs behind the networks it is the router of.
func (in *Incremental) markVM(id string) {
	in.dirtyVM.add(id)
	for n := range in.routerOf[id] {
		for u := range in.byNet[n] {
			in.dirtyVM.add(u)
		}
	}
}

// markName re-judges what reads the records or the domains of a name.
func (in *Incremental) markName(name string) {
	for h := range in.runs[name] {
		in.dirtyDom.add(domKey{h, name})
		for _, a := range in.domains[h][name].IPs {
			in.ChangedAddrs.add(a) // the observer names an address's users by their records
			in.dirtyAddr.add(a)    // a record migrating between two hosts makes their domains one user
		}
	}
	for _, id := range in.byName[name] {
		in.markVM(id)
	}
}

// SetVM writes a VM record.
func (in *Incremental) SetVM(v VM) {
	old, had := in.vms[v.ID]
	in.vms[v.ID] = v
	in.ChangedVMs.add(v.ID)
	if !had {
		l := append(in.byName[v.Name], v.ID)
		slices.SortStableFunc(l, func(a, b string) int { return cmp.Compare(a, b) })
		in.byName[v.Name] = l
	}
	if had && old.HostID != v.HostID {
		removeFrom(in.byHost, old.HostID, v.ID)
		in.markVM(v.ID) // its old host's settledness no longer matters
	}
	addTo(in.byHost, v.HostID, v.ID)
	if had {
		for _, n := range old.NetworkIDs {
			removeFrom(in.byNet, n, v.ID)
		}
	}
	for _, n := range v.NetworkIDs {
		addTo(in.byNet, n, v.ID)
	}
	in.markName(v.Name)
	in.markVM(v.ID)
}

// SetHosts writes every host row.
func (in *Incremental) SetHosts(hs []Host) {
	clear(in.hosts)
	for _, h := range hs {
		in.hosts[h.ID] = h
	}
	in.hostsMoved = true
}

// SetHost writes one host row (a ping that changed nothing that matters moves nothing).
func (in *Incremental) SetHost(h Host) {
	if old, ok := in.hosts[h.ID]; ok && old.Status == h.Status && old.UpSince.Equal(h.UpSince) {
		return
	}
	in.hosts[h.ID] = h
	in.hostsMoved = true
}

// judgeHosts judges again which hosts are settled (Up, and past their grace if they came back) and
// re-judges what stands on a host whose settledness changed.
func (in *Incremental) judgeHosts(t time.Time, grace time.Duration) {
	settled := map[string]bool{}
	in.nextSettle = time.Time{}
	for _, h := range in.hosts {
		settled[h.ID] = h.Status == host.Up && (h.UpSince.IsZero() || t.Sub(h.UpSince) >= grace)
		if at := h.UpSince.Add(grace); h.Status == host.Up && !settled[h.ID] && (in.nextSettle.IsZero() || at.Before(in.nextSettle)) {
			in.nextSettle = at
		}
	}
	moved := func(h string) {
		for name := range in.domains[h] {
			in.dirtyDom.add(domKey{h, name})
		}
		for id := range in.byHost[h] {
			in.markVM(id)
		}
	}
	for h, st := range settled {
		if st != in.settled[h] {
			moved(h)
		}
	}
	for h, st := range in.settled {
		if _, ok := settled[h]; !ok && st {
			moved(h)
		}
	}
	in.settled = settled
	in.hostsMoved = false
}

// SetNetwork writes a network row.
func (in *Incremental) SetNetwork(n Network) {
	old, had := in.networks[n.ID]
	in.networks[n.ID] = n
	if had && old.RouterID != "" {
		removeFrom(in.routerOf, old.RouterID, n.ID)
	}
	if n.RouterID != "" {
		addTo(in.routerOf, n.RouterID, n.ID)
	}
	for u := range in.byNet[n.ID] {
		in.dirtyVM.add(u)
	}
}

// SetPool writes a network's whole address pool. Only the addresses whose entries in this pool
// changed (or came or went) are re-judged and reported changed: a pool is written anew for any one
// allocation or release, and touching each of its addresses made every such write cost the whole
// pool in this checker and in the observer. What an unchanged entry feeds (byAddr, the domains at
// the address, the observer's users) is as it was.
func (in *Incremental) SetPool(networkID string, ips []IP) {
	old := in.pools[networkID]
	if slices.Equal(old, ips) {
		return
	}
	touch := func(addr string) {
		in.ChangedAddrs.add(addr)
		for d := range in.domsAt[addr] {
			in.dirtyDom.add(d)
		}
	}
	changed := set[string]{} // the addresses whose entries (in pool order) differ
	if len(old) == len(ips) && slices.EqualFunc(old, ips, func(a, b IP) bool { return a.Address == b.Address }) {
		for i := range ips { // the same addresses in the same order, the usual write: entry by entry
			if old[i] != ips[i] {
				changed.add(ips[i].Address)
			}
		}
	} else {
		entries := func(pool []IP) map[string][]IP {
			m := make(map[string][]IP, len(pool))
			for _, ip := range pool {
				m[ip.Address] = append(m[ip.Address], ip)
			}
			return m
		}
		was, is := entries(old), entries(ips)
		for _, pool := range [][]IP{old, ips} {
			for _, ip := range pool {
				if !slices.Equal(was[ip.Address], is[ip.Address]) {
					changed.add(ip.Address)
				}
			}
		}
	}
	moved := func(addr string) bool { _, ok := changed[addr]; return ok }
	for _, ip := range old {
		if !moved(ip.Address) {
			continue
		}
		in.byAddr[ip.Address] = slices.DeleteFunc(in.byAddr[ip.Address], func(e IP) bool { return e.NetworkID == networkID })
		if len(in.byAddr[ip.Address]) == 0 {
			delete(in.byAddr, ip.Address)
		}
		touch(ip.Address)
	}
	in.pools[networkID] = slices.Clone(ips)
	for _, ip := range ips {
		if !moved(ip.Address) {
			continue
		}
		l := append(in.byAddr[ip.Address], ip)
		slices.SortStableFunc(l, func(a, b IP) int { return cmp.Compare(a.NetworkID, b.NetworkID) })
		in.byAddr[ip.Address] = l
		touch(ip.Address)
	}
}

// SetVolume writes a volume row.
func (in *Incremental) SetVolume(v Volume) {
	old, had := in.volumes[v.ID]
	in.volumes[v.ID] = v
	if had && old.Path != v.Path {
		in.byPath[old.Path] = slices.DeleteFunc(in.byPath[old.Path], func(id string) bool { return id == v.ID })
		in.markPath(old.Path)
	}
	if !had || old.Path != v.Path {
		l := append(in.byPath[v.Path], v.ID)
		slices.SortStableFunc(l, func(a, b string) int { return cmp.Compare(a, b) })
		in.byPath[v.Path] = l
	}
	in.markPath(v.Path)
}

func (in *Incremental) markPath(path string) {
	for d := range in.domsOn[path] {
		in.dirtyDom.add(d)
	}
}

// SetDomains writes what one host runs now (domains not running are left out, as the checks do).
func (in *Incremental) SetDomains(h string, ds []Domain) {
	old := in.domains[h]
	now := map[string]Domain{}
	for _, d := range ds {
		if d.Running {
			now[d.Name] = d
		}
	}
	for name, d := range old {
		if n, ok := now[name]; ok && sameDomain(n, d) {
			continue
		}
		in.dropDomain(h, d)
		if _, ok := now[name]; !ok {
			removeFrom(in.runs, name, h)
			in.ChangedNames.add(name)
			for _, id := range in.byName[name] {
				in.markVM(id)
			}
		}
	}
	for name, d := range now {
		o, ok := old[name]
		if ok && sameDomain(o, d) {
			continue
		}
		if ok && o.Asserted != d.Asserted { // the VM's outage verdict and its observation move with it
			in.ChangedNames.add(name)
			for _, id := range in.byName[name] {
				in.markVM(id)
			}
		}
		k := domKey{h, name}
		in.dirtyDom.add(k)
		for _, a := range d.IPs {
			addTo(in.domsAt, a, k)
			in.dirtyAddr.add(a)
			in.ChangedAddrs.add(a)
		}
		for _, p := range d.Disks {
			addTo(in.domsOn, p, k)
		}
		if _, ok := old[name]; !ok {
			addTo(in.runs, name, h)
			in.ChangedNames.add(name)
			for _, id := range in.byName[name] {
				in.markVM(id)
			}
		}
	}
	if len(now) == 0 {
		delete(in.domains, h)
	} else {
		in.domains[h] = now
	}
}

func sameDomain(a, b Domain) bool {
	return a.Asserted == b.Asserted && slices.Equal(a.IPs, b.IPs) && slices.Equal(a.Disks, b.Disks)
}

func (in *Incremental) dropDomain(h string, d Domain) {
	k := domKey{h, d.Name}
	in.dirtyDom.add(k)
	for _, a := range d.IPs {
		removeFrom(in.domsAt, a, k)
		in.dirtyAddr.add(a)
		in.ChangedAddrs.add(a)
	}
	for _, p := range d.Disks {
		removeFrom(in.domsOn, p, k)
	}
}

// SetFaults writes the faults so far (when they changed).
func (in *Incremental) SetFaults(fs []Fault) {
	in.faults = fs
	in.dirtyStart = true
	t := set[string]{}
	for _, f := range fs {
		for _, x := range f.Targets {
			t.add(x)
		}
	}
	if !maps.Equal(t, in.faulted) {
		in.faulted = t
		for id := range in.vms {
			in.dirtyVM.add(id)
		}
	}
}

// SetNetworkWrites writes the network state writes so far, in time order (when they grew): the
// failed starts are judged again, on where their networks stood at their calls.
func (in *Incremental) SetNetworkWrites(ws []NetworkChange) {
	in.writes = ws
	in.dirtyStart = true
}

// SetVMWrites writes the VM state writes and the deploys' unexpected-state lines so far, in history
// order (when they grew). Only a new line can explain a failed deploy (movedAfterItsStart), and it
// comes before the deploy returns, so only then are the failed starts judged again.
func (in *Incremental) SetVMWrites(ws []VMChange) {
	for _, w := range ws[min(len(in.vmWrites), len(ws)):] {
		if w.Unexpected {
			in.dirtyStart = true
		}
	}
	if len(ws) < len(in.vmWrites) { // not the list it was
		in.dirtyStart = true
	}
	in.vmWrites = ws
}

// SetOps writes the client operations so far (when they changed): the list of the last call grown,
// or an open op's fields filled in; an op that returned does not change again.
func (in *Incremental) SetOps(ops []ClientOp) {
	if len(ops) < in.opsSeen { // not the list it was: look at all of it again
		in.opsSeen, in.opsOpen, in.failedStarts, in.migrations = 0, nil, nil, nil
	}
	for ; in.opsSeen < len(ops); in.opsSeen++ {
		in.opsOpen = append(in.opsOpen, in.opsSeen)
		if ops[in.opsSeen].Kind == "migrate" {
			in.migrations = append(in.migrations, in.opsSeen)
		}
	}
	open := in.opsOpen[:0]
	for _, i := range in.opsOpen {
		switch op := ops[i]; {
		case op.Return.IsZero():
			open = append(open, i)
		case !op.OK && slices.Contains(StartKinds, op.Kind):
			j, _ := slices.BinarySearch(in.failedStarts, i)
			in.failedStarts = slices.Insert(in.failedStarts, j, i)
		}
	}
	in.opsOpen = open
	in.ops = ops
	in.dirtyStart = true
}

// Advance judges which migrations are in their handover at t (Handovers, with the report grace) and
// judges again, and has observed again, the domains and addresses of the VMs whose destinations
// changed. Check advances to its own time; an observer that reads Handovers before Check advances
// first.
func (in *Incremental) Advance(t time.Time, grace time.Duration) {
	if grace != in.handGrace { // a migration left for good under the old grace may be back
		in.handGrace, in.migrations = grace, nil
		for i, op := range in.ops {
			if op.Kind == "migrate" {
				in.migrations = append(in.migrations, i)
			}
		}
	}
	var now Handovers
	keep := in.migrations[:0]
	for _, i := range in.migrations {
		op := in.ops[i]
		now = now.add(op, t, grace)
		if op.Return.IsZero() || !t.After(op.Return.Add(grace)) { // checks come in time order
			keep = append(keep, i)
		}
	}
	in.migrations = keep
	for id, d := range in.handing {
		if !slices.Equal(d, now[id]) {
			in.markRecord(id)
		}
	}
	for id := range now {
		if _, had := in.handing[id]; !had {
			in.markRecord(id)
		}
	}
	in.handing = now
}

// markRecord re-judges what reads the record id's name.
func (in *Incremental) markRecord(id string) {
	if v, ok := in.vms[id]; ok {
		in.markName(v.Name)
	}
}

// Handovers are the migrations in their handover at the last Advance.
func (in *Incremental) Handovers() Handovers { return in.handing }

func (in *Incremental) records(name string) []VM {
	var out []VM
	for _, id := range in.byName[name] {
		out = append(out, in.vms[id])
	}
	return out
}

// Records are the VM records named name, sorted by ID.
func (in *Incremental) Records(name string) []VM { return in.records(name) }

// VM is a record by ID.
func (in *Incremental) VM(id string) (VM, bool) { v, ok := in.vms[id]; return v, ok }

// RunsAnywhere says whether some host runs a domain of that name.
func (in *Incremental) RunsAnywhere(name string) bool { return len(in.runs[name]) > 0 }

// Network reads a network's row as last set ("", false: none).
func (in *Incremental) Network(id string) (Network, bool) { n, ok := in.networks[id]; return n, ok }

// Pool is a network's address pool, in pool order.
func (in *Incremental) Pool(networkID string) []IP { return in.pools[networkID] }

// PoolEntries are the pool entries of an address, sorted by network.
func (in *Incremental) PoolEntries(addr string) []IP { return in.byAddr[addr] }

// DomainsUsing lists the running domains with addr among their addresses, sorted by host and name.
func (in *Incremental) DomainsUsing(addr string) []Domain {
	var out []Domain
	for k := range in.domsAt[addr] {
		out = append(out, in.domains[k.host][k.name])
	}
	slices.SortFunc(out, func(a, b Domain) int { return cmp.Or(cmp.Compare(a.HostID, b.HostID), cmp.Compare(a.Name, b.Name)) })
	return out
}

func (in *Incremental) domain(k domKey) (Domain, bool) {
	d, ok := in.domains[k.host][k.name]
	return d, ok
}

// Check judges the objects the updates since the last check reached, at time t, and returns every
// violation that holds, as Tracker.Check would on the whole snapshot: netChanges are the network
// writes not yet checked; grace and ghostBound as in Snapshot.
func (in *Incremental) Check(t time.Time, grace, ghostBound time.Duration, netChanges []NetworkChange) []Violation {
	if in.hostsMoved || grace != in.grace || (!in.nextSettle.IsZero() && !t.Before(in.nextSettle)) {
		in.judgeHosts(t, grace)
	}
	if grace != in.grace {
		in.grace, in.dirtyStart = grace, true
	}
	in.Advance(t, grace)
	if on := ghostBound > 0; on != in.ghostOn {
		in.ghostOn = on
		clear(in.ghosts)
		for id := range in.vms {
			in.dirtyVM.add(id)
		}
	}

	settled := in.settled
	isSettled := func(h string) bool { return settled[h] }
	on := func(h, name string) bool { _, ok := in.domains[h][name]; return ok }
	for k := range in.dirtyDom {
		d, ok := in.domain(k)
		if !ok {
			delete(in.domV, k)
			continue
		}
		recs := in.records(d.Name)
		var vs []Violation
		if v, ok := orphanDomain(d, recs, settled[d.HostID], in.handing.To, t); ok {
			vs = append(vs, v)
		}
		vs = append(vs, domainIPs(d, recs, func(a string) []IP { return in.byAddr[a] }, t)...)
		vs = append(vs, domainVolumes(d, func(p string) []Volume {
			var out []Volume
			for _, id := range in.byPath[p] {
				out = append(out, in.volumes[id])
			}
			return out
		}, t)...)
		if len(vs) > 0 {
			in.domV[k] = vs
		} else {
			delete(in.domV, k)
		}
	}
	for a := range in.dirtyAddr {
		var users []Domain
		for k := range in.domsAt[a] {
			users = append(users, in.domains[k.host][k.name])
		}
		if v, ok := sharedIP(a, users, in.records, in.handing.To, t); ok {
			in.addrV[a] = v
		} else {
			delete(in.addrV, a)
		}
	}
	w := outageWorld{
		asserted:     func(h, name string) bool { return in.domains[h][name].Asserted },
		settled:      isSettled,
		on:           on,
		runsAnywhere: in.RunsAnywhere,
		network:      func(id string) (Network, bool) { n, ok := in.networks[id]; return n, ok },
		record: func(id string) (VM, bool) {
			r, ok := in.vms[id]
			return r, ok && !r.Removed
		},
		faulted: func(x string) bool { _, ok := in.faulted[x]; return ok },
	}
	for id := range in.dirtyVM {
		v := in.vms[id]
		if vs := vmOutages(v, w, t); len(vs) > 0 {
			in.vmV[id] = vs
		} else {
			delete(in.vmV, id)
		}
		if !in.ghostOn {
			continue
		}
		why, holds := ghostWhy(v, isSettled, on)
		switch g := in.ghosts[id]; {
		case !holds:
			delete(in.ghosts, id)
		case g == nil || g.key != ghostKey(v):
			in.ghosts[id] = &ghost{key: ghostKey(v), why: why, v: v, since: t}
		default:
			g.why, g.v = why, v
		}
	}
	if in.dirtyStart {
		in.startV = startFailures(Snapshot{Ops: in.ops, Faults: in.faults, NetworkWrites: in.writes, VMWrites: in.vmWrites, ReportGrace: in.grace}, in.failedStarts)
	}
	clear(in.dirtyDom)
	clear(in.dirtyAddr)
	clear(in.dirtyVM)
	in.dirtyStart = false

	// what holds now: the states judged (at t), the events and the ghosts that lasted
	out := CheckNetworkLocks(Snapshot{NetworkChanges: netChanges})
	out = append(out, in.startV...)
	stamp := func(vs ...Violation) {
		for _, v := range vs {
			v.Time = t
			out = append(out, v)
		}
	}
	for _, vs := range in.domV {
		stamp(vs...)
	}
	for _, v := range in.addrV {
		stamp(v)
	}
	for _, vs := range in.vmV {
		stamp(vs...)
	}
	for _, g := range in.ghosts {
		if v, ok := ghostViolation(g.v, g.why, g.since, t, ghostBound); ok {
			out = append(out, v)
		}
	}
	sortViolations(out)
	return out
}
