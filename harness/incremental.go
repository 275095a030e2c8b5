package harness

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/invariant"
)

// CheckModeEnv chooses how the simulator checks the invariants after each step: incremental (the
// default: only what the step changed is judged again, and everything once more at the end of the
// run), full (the whole snapshot after every step, as before) or compare (both after every step; the
// run fails if they differ in a violation or an observation — a debugging aid, slow).
const CheckModeEnv = "CSCONFORM_CHECK"

type checkMode int

const (
	checkIncremental checkMode = iota
	checkFull
	checkCompare
)

func checkModeFromEnv() (checkMode, error) {
	switch m := os.Getenv(CheckModeEnv); m {
	case "", "incremental":
		return checkIncremental, nil
	case "full":
		return checkFull, nil
	case "compare":
		return checkCompare, nil
	default:
		return 0, fmt.Errorf("%s wants incremental, full or compare, got %q", CheckModeEnv, m)
	}
}

// incCheck is a simulated cluster's incremental checker and what it has read so far.
type incCheck struct {
	in                *invariant.Incremental
	loaded            bool
	hostVer           []uint64    // by host, in HostIDs order
	hosts             []*sim.Host // the same order
	domainsVer        uint64      // the scheduler's DomainsVersion when the hosts were last compared
	opsVer, faultsVer uint64
	writesSeen        int // the network writes handed to the checker
	vmWritesSeen      int // the VM writes handed to the checker
	assertedGen       int // the asserted stops' generation the domains were filtered by
	compare           bool
	mismatch          string // compare: the first difference found
}

func newIncCheck(compare bool) *incCheck {
	return &incCheck{in: invariant.NewIncremental(), compare: compare}
}

func (c *Cluster) invVM(v *impl.VMVO) invariant.VM {
	nets := make([]string, len(v.NetworkIDs))
	for i, n := range v.NetworkIDs {
		nets[i] = id(n)
	}
	grace, released := c.haView(v)
	return invariant.VM{ID: id(v.ID), Name: v.Name, Type: v.Type, State: v.State, HostID: v.HostID, LastHostID: v.LastHostID, Removed: v.Removed, NetworkIDs: nets,
		HAGrace: grace, HAReleased: released}
}

// haHolds is what the checker saw of HA restart items holding VMs' power reports (haRestartHolds):
// which held at the last look, and when each VM's last hold was seen gone (invariant.VM.HAReleased).
type haHolds struct {
	held     map[int64]bool
	released map[int64]time.Time
}

// haView is the VM's HA terms as a ghost: HAGrace and HAReleased. A hold ends with a write the checker
// is handed (the HA item's, or the VM row's whose update count the item no longer matches), so both
// the full and the incremental check see it end at the same look; that look's time stands for the end.
func (c *Cluster) haView(v *impl.VMVO) (time.Duration, time.Time) {
	h := &c.haHold
	holds := haRestartHolds(c.DB.HaWorkRows(v.ID), v)
	switch {
	case holds:
		if h.held == nil {
			h.held = map[int64]bool{}
		}
		h.held[v.ID] = true
	case h.held[v.ID]:
		delete(h.held, v.ID)
		if h.released == nil {
			h.released = map[int64]time.Time{}
		}
		h.released[v.ID] = c.Now()
	}
	return haGrace(v, holds, c.Config), h.released[v.ID]
}

// haGrace is the extra time as a ghost (invariant.VM.HAGrace) of a VM that is HA's: HA's retry
// interval, for an HA-enabled VM (a power-off report hands it to HA) and for any VM with an HA
// restart item that holds its power reports (holds: haRestartHolds, the item a restarted server's
// cancelWorkItems or a host found down schedules for every VM, HA offering or not; when fencing fails
// it waits restart.retry.interval, and hasPendingHaWork postpones every report until then).
func haGrace(v *impl.VMVO, holds bool, cfg *impl.Config) time.Duration {
	if !v.HAEnabled && !holds {
		return 0
	}
	return cfg.Seconds("restart.retry.interval")
}

// haRestartHolds reads the VM's op_ha_work rows for detect.HaRestartHolds.
func haRestartHolds(rows []impl.HaWorkVO, v *impl.VMVO) bool {
	hr := make([]detect.HaWorkRow, len(rows))
	for i, w := range rows {
		hr[i] = detect.HaWorkRow{Type: string(w.Type), Step: string(w.Step), Taken: !w.DateTaken.IsZero(), PrevUpdate: w.PrevUpdate}
	}
	return detect.HaRestartHolds(hr, v.UpdateCount)
}

func invNetwork(n *impl.NetworkVO) invariant.Network {
	return invariant.Network{ID: id(n.ID), Name: n.Name, State: n.State, RouterID: idOrEmpty(n.RouterID), Removed: n.Removed}
}

func invPool(db *impl.DB, nid int64) []invariant.IP {
	var out []invariant.IP
	for _, ip := range db.IPPool(nid) {
		out = append(out, invariant.IP{Address: ip.Address, NetworkID: id(nid), Free: ip.VMID == 0, VMID: idOrEmpty(ip.VMID)})
	}
	return out
}

func invVolume(v *impl.VolumeVO) invariant.Volume {
	return invariant.Volume{ID: id(v.ID), VMID: id(v.VMID), Path: v.Path, State: v.State, Removed: v.Removed}
}

func (c *Cluster) invDomains(h string) []invariant.Domain {
	var out []invariant.Domain
	for _, d := range c.sim().hosts[h].Domains() {
		out = append(out, invariant.Domain{HostID: h, Name: d.Name, Running: d.Running, IPs: d.IPs, Disks: d.Disks})
	}
	return c.Rec.asserted.Filter(map[string]bool{h: true}, out)
}

// update hands the checker what changed since the last check: the rows the store's writes touched,
// the hosts whose domains changed, the client operations and faults when they moved. full (or the
// first check) loads the whole snapshot instead.
func (c *Cluster) updateIncremental(full bool) {
	ic := c.inc
	ch := c.DB.TakeChanges()
	r := c.Rec
	if full || !ic.loaded {
		s := c.Snapshot()
		ic.in.Load(s)
		ic.loaded = true
		ic.hosts, ic.hostVer = nil, nil
		for _, h := range c.HostIDs {
			ic.hosts = append(ic.hosts, c.sim().hosts[h])
			ic.hostVer = append(ic.hostVer, c.sim().hosts[h].Version())
		}
		ic.domainsVer = c.sim().sched.DomainsVersion()
		ic.opsVer, ic.faultsVer, ic.writesSeen, ic.vmWritesSeen = r.opsVer, r.faultsVer, len(s.NetworkWrites), len(s.VMWrites)
		return
	}
	r.takeTouched()
	for _, vid := range ch.VMs {
		if v := c.DB.VM(vid); v != nil {
			ic.in.SetVM(c.invVM(v))
		}
	}
	for _, nid := range ch.Networks {
		if n := c.DB.Network(nid); n != nil {
			ic.in.SetNetwork(invNetwork(n))
		}
	}
	for _, nid := range ch.IPPools {
		ic.in.SetPool(id(nid), invPool(c.DB, nid))
	}
	for _, vid := range ch.Volumes {
		if v := c.DB.Volume(vid); v != nil {
			ic.in.SetVolume(invVolume(v))
		}
	}
	for _, hid := range ch.Hosts {
		if h := c.DB.Host(hid); h != nil {
			ic.in.SetHost(invariant.Host{ID: h.ID, Name: h.ID, Status: h.Status, UpSince: c.Rec.HostUpSince(h.ID)})
		}
	}
	refilter := false
	if g := c.Rec.asserted.Generation(); g != ic.assertedGen { // rare: a caller's forced stop moved
		ic.assertedGen, refilter = g, true
	}
	// the hosts share a scheduler whose version moves with any of theirs: most steps change no
	// domain and cost one comparison, not one per host
	if dv := c.sim().sched.DomainsVersion(); dv != ic.domainsVer || refilter {
		ic.domainsVer = dv
		for i, hv := range ic.hosts { // a version per host: a comparison each, no lookup
			if v := hv.Version(); v != ic.hostVer[i] || refilter {
				ic.hostVer[i] = v
				ic.in.SetDomains(hv.ID, c.invDomains(hv.ID))
			}
		}
	}
	// in the simulator nothing runs while the checker does: the recorder's slices are read in place
	if r.opsVer != ic.opsVer {
		ic.opsVer = r.opsVer
		ic.in.SetOps(r.Ops)
	}
	if r.faultsVer != ic.faultsVer {
		ic.faultsVer = r.faultsVer
		ic.in.SetFaults(r.Faults)
	}
	if n := len(r.netWrites); n != ic.writesSeen { // only ever grown
		ic.writesSeen = n
		ic.in.SetNetworkWrites(r.netWrites[:n:n])
	}
	if n := len(r.vmWrites); n != ic.vmWritesSeen { // only ever grown
		ic.vmWritesSeen = n
		ic.in.SetVMWrites(r.vmWrites[:n:n])
	}
}

// checkIncremental is checkNow on the incremental checker (with compare: on both, compared).
func (c *Cluster) checkIncremental(full bool) {
	ic := c.inc
	var ref invariant.Snapshot
	if ic.compare {
		ref = c.Snapshot() // before update: the touched objects move once, here
	}
	c.updateIncremental(full)
	now := c.Now()
	grace := 2*c.Config.Seconds("ping.interval") + 10*time.Second
	ic.in.Advance(now, grace) // the migrations' handovers, as the observations read them
	netChanges := c.Rec.pendingNetChanges()
	c.Rec.checked(len(netChanges))
	obs := c.Rec.observationsIncremental(ic.in)
	ic.in.ClearChanged()
	vs := ic.in.Check(now, grace, c.ghostBound(now), netChanges)
	if ic.compare {
		ref.NetworkChanges = netChanges
		refObs := c.Rec.observations(ref)
		refVs := c.tracker.Check(ref)
		switch {
		case ic.mismatch != "":
		case !slices.Equal(obs, refObs):
			ic.mismatch = fmt.Sprintf("at %s the incremental check observes %v, the full one %v", now.Format(time.RFC3339Nano), obs, refObs)
		case !slices.EqualFunc(vs, refVs, sameViolation):
			ic.mismatch = fmt.Sprintf("at %s the incremental check finds %v, the full one %v", now.Format(time.RFC3339Nano), vs, refVs)
		}
	}
	c.Rec.applyObservations(obs)
	c.judge(vs, now)
}

func sameViolation(a, b invariant.Violation) bool {
	return a.Invariant == b.Invariant && a.Object == b.Object && a.Message == b.Message && a.Time.Equal(b.Time)
}

// observationsIncremental decides the observations as observations does on the whole snapshot, looking
// only at the objects that may have changed: the VM records written or whose name started or stopped
// running somewhere, the addresses whose users or pool entries changed, and every object an event
// named since the last observation.
func (r *Recorder) observationsIncremental(in *invariant.Incremental) []observation {
	vms := map[int64]bool{}
	addrs := map[string]bool{}
	addVM := func(s string) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			vms[n] = true
		}
	}
	for v := range in.ChangedVMs {
		addVM(v)
	}
	for _, v := range r.asserted.TakeEnded() {
		addVM(v)
	}
	for name := range in.ChangedNames {
		for _, v := range in.Records(name) {
			addVM(v.ID)
		}
	}
	for a := range in.ChangedAddrs {
		addrs[a] = true
	}
	for obj := range r.touched {
		if v, ok := strings.CutPrefix(obj, "vm:"); ok {
			addVM(v)
		} else if a, ok := strings.CutPrefix(obj, "ip:"); ok {
			addrs[a] = true
		}
	}
	o := &observer{r: r}
	for _, n := range slices.Sorted(mapsKeys(vms)) {
		if v, ok := in.VM(id(n)); ok && v.Type == "User" && !r.asserted.Exempt(v.Name) {
			o.vm(v, in.RunsAnywhere(v.Name))
		}
	}
	// the addresses in pool order: by network, then place in its pool
	type entry struct {
		ip       invariant.IP
		net, idx int64
	}
	var entries []entry
	for a := range addrs {
		for _, ip := range in.PoolEntries(a) {
			nid, _ := strconv.ParseInt(ip.NetworkID, 10, 64)
			idx := slices.IndexFunc(in.Pool(ip.NetworkID), func(p invariant.IP) bool { return p.Address == a })
			entries = append(entries, entry{ip, nid, int64(idx)})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Or(cmp.Compare(a.net, b.net), cmp.Compare(a.idx, b.idx)) })
	for _, e := range entries {
		var users []string
		handover := map[string]bool{} // as observations: a migrating guest's two domains are one user
		for _, d := range in.DomainsUsing(e.ip.Address) {
			recs := in.Records(d.Name)
			obj := observedOwner(recs)
			mig := slices.ContainsFunc(recs, func(v invariant.VM) bool { return invariant.MigrationHost(v, d.HostID, in.Handovers().To(v.ID)) })
			for _, a := range d.IPs {
				if a == e.ip.Address && obj != "" {
					if mig {
						if handover[obj] {
							continue
						}
						handover[obj] = true
					}
					users = append(users, obj)
				}
			}
		}
		o.ip(e.ip, users)
	}
	o.networks(in.Network)
	return o.out
}

// observedOwner is the VM object a domain of these records' name stands for, as observations picks it
// (records in id order: the last live one, else the first).
func observedOwner(recs []invariant.VM) string {
	slices.SortStableFunc(recs, func(a, b invariant.VM) int {
		x, _ := strconv.ParseInt(a.ID, 10, 64)
		y, _ := strconv.ParseInt(b.ID, 10, 64)
		return cmp.Compare(x, y)
	})
	owner := ""
	for _, v := range recs {
		if !v.Removed || owner == "" {
			owner = "vm:" + v.ID
		}
	}
	return owner
}

func mapsKeys[K comparable](m map[K]bool) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
