package invariant

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// RowID is a row's id as a snapshot writes it; RefID a reference to a row, "" for none (0).
func RowID(i int64) string { return strconv.FormatInt(i, 10) }

func RefID(i int64) string {
	if i == 0 {
		return ""
	}
	return RowID(i)
}

// Snapshot is what the checks look at: the management server's records and
// the hypervisors' truth at one moment, plus the history needed to judge
// failures and network writes.
type Snapshot struct {
	Time     time.Time
	VMs      []VM // management-server records, including removed (expunged) rows with Removed=true
	Hosts    []Host
	Networks []Network
	IPs      []IP // the guest IP pool of every network
	Volumes  []Volume
	Domains  []Domain // the truth: what the hypervisors run (from the driver, never from the agent)
	// NetworkChanges are the network state writes to check (the harness
	// passes those since the previous check).
	NetworkChanges []NetworkChange
	// NetworkWrites are every network state write so far, in time order: a failed start is judged on
	// where its networks stood at its call (nil: unknown, as from a world that does not export them).
	NetworkWrites []NetworkChange
	// VMWrites are every VM state write so far, and the deploys' lines that the VM a start left was
	// not Running (VMChange.Unexpected), in history order: a deploy that failed so is judged on who
	// moved its VM after its start completed (nil: unknown).
	VMWrites []VMChange
	// Ops are the client operations so far (call and return times, result); one still in flight has
	// a zero Return: it can explain a failure though it has not ended.
	Ops    []ClientOp
	Faults []Fault // injected faults so far
	Locks  []Lock  // not needed by the checks below, informational
	// ReportGrace is how long after a host comes back Up the server may take to adopt, from the
	// host's power reports, a domain it lost track of while the host was away (two pings).
	ReportGrace time.Duration
	// GhostBound is how long a VM record may say Running while no domain runs on its host before
	// power sync must have noticed (a report, the graceful period and a postponement; from the run's
	// config). Zero: the ghost-record check is off (a world that cannot tell).
	GhostBound time.Duration
}

// VM is a vm_instance row.
type VM struct {
	ID, Name, Type     string // Type is "User" or "DomainRouter"
	State              vm.State
	HostID, LastHostID string
	Removed            bool
	NetworkIDs         []string // the networks of its NICs (nil: unknown)
	// HAGrace lengthens the ghost-record bound for this VM: an HA-enabled VM reported off is handed to
	// HA (scheduleRestart) instead of being synced to Stopped, and HA, when it cannot fence the host,
	// tries again after restart.retry.interval.
	HAGrace time.Duration
	// HAReleased is when an HA restart item last stopped holding this VM's power reports (zero: none
	// did). While it held, power sync only postponed the reports and reset the VM's power-change
	// counters, so a ghost has its whole bound again from then.
	HAReleased time.Time
	// Power, PowerHost, PowerCount and PowerUpdated are the power columns (power_state, power_host,
	// power_state_update_count, power_state_update_time); zero when the world does not say.
	Power        vm.PowerState
	PowerHost    string
	PowerCount   int
	PowerUpdated time.Time
}

// Host is a host row.
type Host struct {
	ID, Name string
	Status   host.Status
	// UpSince is when the host last came back Up after being away (zero: never away).
	UpSince time.Time
}

// Network is a networks row.
type Network struct {
	ID, Name string
	State    network.State
	RouterID string // its virtual router's VM id ("" none, or unknown)
	// Removed: deleteNetwork removed the row (a world whose records omit removed rows lists it not
	// at all).
	Removed bool
}

// IP is one address of a network's guest IP pool.
type IP struct {
	Address, NetworkID string
	Free               bool
	VMID               string // holder when !Free
}

// Volume is a volumes row.
type Volume struct {
	ID, VMID, Path string
	State          string // Allocated, Ready, Destroy, Expunging, Expunged
	Removed        bool
}

// Domain is a hypervisor domain as the driver sees it.
type Domain struct {
	HostID, Name string
	Running      bool
	IPs          []string
	Disks        []string // volume paths it holds open
	// Asserted: a caller's forced stop asserted this domain stopped (CloudStack marks the VM Stopped
	// and releases it even when the host cannot be reached, apache/cloudstack#6798). Its record and
	// volumes are then not the server's to keep: no orphan-domain, no volume-in-use. The harness
	// leaves its addresses out as well.
	Asserted bool `json:",omitempty"`
}

// NetworkChange is one write of a network's state.
type NetworkChange struct {
	Time      time.Time
	NetworkID string
	From, To  network.State
	Actor     string
	// LockHolder is the actor holding the network's lock-table entry at the
	// write, "" if none.
	LockHolder string
	Direct     bool // written around the FSM
}

// VMChange is one write of a VM row's state (From -> To by Actor), or, when Unexpected, the line a
// deploy's API job logs when the VM its start left is To, not Running (UserVmManagerImpl's "VM ...
// unexpectedly went to <To> state"; From is empty then).
type VMChange struct {
	Time       time.Time
	VMID       string
	From, To   vm.State
	Actor      string
	Unexpected bool
}

// ClientOp is one API call a client made and saw finish.
type ClientOp struct {
	ID     int
	Client string
	// Kind is "deploy", "start", "startNoRetry", "stop", "forceStop",
	// "destroy", "destroyExpunge", "expunge", "createNetwork", ...
	Kind         string
	VMID         string
	HostID       string // host the VM was placed on, if any
	NetworkIDs   []string
	Call, Return time.Time
	OK           bool
	Err          string
}

// Fault is one injected fault.
type Fault struct {
	Kind       string
	Targets    []string  // "host:<id>", "vm:<id>", "network:<id>", "ms"
	Begin, End time.Time // End zero = still active
	Disruptive bool
}

// Lock is a lock-table entry.
type Lock struct {
	Key, Owner string
}

// Violation is one broken invariant.
type Violation struct {
	// lowercase keys, as every csconform JSON document has them (internal/schema)
	Invariant string    `json:"invariant"`
	Object    string    `json:"object"`
	Time      time.Time `json:"time"`
	Message   string    `json:"message"`
}

func (v Violation) String() string {
	return v.Invariant + " " + v.Object + ": " + v.Message
}

// Invariant names, used as Violation.Invariant.
const (
	OrphanDomain            = "orphan-domain"
	IPConflict              = "ip-conflict"
	VolumeInUse             = "volume-in-use"
	NetworkLock             = "network-lock"
	UnexplainedStartFailure = "unexplained-start-failure"
	NetworkOutage           = "network-outage"
	GhostRecord             = "ghost-record"
	// StuckInTransition is judged at the end of a run by the harness (it needs the cloud to run on
	// alone): a VM, network or job still in a transitional state past the run's liveness bound.
	StuckInTransition = "stuck-in-transition"
	// LeftServerJob is judged at the end of a run by the harness, which knows when a management
	// server stopped: a job of a stopped server still in progress once its peers should have judged
	// it gone and cleaned up after it (onManagementNodeLeft), while another server ran.
	LeftServerJob = "left-server-job"
	// UnexplainedStop is judged at the end of a run from the recorded history (detect): a user
	// VM's domain that stopped while its record said Running, with no client operation, fault or
	// host failure to explain it.
	UnexplainedStop = "unexplained-stop"
	// TransitionGuard is judged at the end of a run from the recorded history (model/guard): a state
	// change CloudStack does not allow at that point — by that thread, for that reason, then.
	TransitionGuard = "transition-guard"
	// StorageLeak is judged at the end of a run (detect), in a world that can list what primary
	// storage holds: a volume the records call Expunged whose file is still there.
	StorageLeak = "storage-leak"
	// HaPromise is judged at the end of a run from the recorded history (detect): HA dropped an
	// HA-enabled VM it was asked to restart though nothing but its own tries had moved it, gave an
	// item up before max.retries tries, or held a VM's power reports with no pending work.
	HaPromise = "ha-promise"
)

// Lasting says whether an invariant judges a state that may heal (a running domain without a live
// record, an address used twice, …) rather than an event that happened (a write under another's lock,
// a start that failed): only a state has a duration and can still be present at the end of a run.
func Lasting(name string) bool {
	return name != NetworkLock && name != UnexplainedStartFailure && name != LeftServerJob && name != UnexplainedStop && name != TransitionGuard && name != HaPromise
}

// Names lists every invariant, in the order Check runs them (the timed ones last).
var Names = []string{OrphanDomain, IPConflict, VolumeInUse, NetworkLock, UnexplainedStartFailure, NetworkOutage, GhostRecord, StuckInTransition, LeftServerJob, UnexplainedStop, TransitionGuard, StorageLeak, HaPromise}

// StartKinds are the op kinds that start a VM.
var StartKinds = []string{"deploy", "start", "startNoRetry"}

// StopKinds are the op kinds that stop a VM's domain.
var StopKinds = []string{"stop", "forceStop", "destroy", "destroyExpunge", "expunge"}

// DisruptiveKinds are the op kinds that legitimately make a concurrent start
// on the same VM or network fail.
var DisruptiveKinds = []string{"stop", "forceStop", "destroy", "destroyExpunge", "expunge", "deleteNetwork", "restartNetwork"}

var destroyKinds = []string{"destroy", "destroyExpunge", "expunge"}

// Check runs every invariant and returns the violations sorted by
// (Invariant, Object, Message, Time), so that runs can be diffed.
func Check(s Snapshot) []Violation {
	var out []Violation
	out = append(out, CheckOrphanDomains(s)...)
	out = append(out, CheckIPs(s)...)
	out = append(out, CheckVolumes(s)...)
	out = append(out, CheckNetworkLocks(s)...)
	out = append(out, CheckStartFailures(s)...)
	out = append(out, CheckNetworkOutages(s)...)
	sortViolations(out)
	return out
}

func sortViolations(vs []Violation) {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(
			cmp.Compare(a.Invariant, b.Invariant),
			cmp.Compare(a.Object, b.Object),
			cmp.Compare(a.Message, b.Message),
			a.Time.Compare(b.Time),
		)
	})
}

// domainName names a domain in messages; the host matters because the same
// VM may run on two hosts at once, which is exactly the race we look for.
func domainName(d Domain) string {
	return fmt.Sprintf("%s on host %s", d.Name, d.HostID)
}

// recordsByName indexes VM records by name, each list sorted by ID so
// messages do not depend on input order.
func recordsByName(vms []VM) map[string][]VM {
	m := map[string][]VM{}
	for _, v := range vms {
		m[v.Name] = append(m[v.Name], v)
	}
	for _, l := range m {
		slices.SortStableFunc(l, func(a, b VM) int { return cmp.Compare(a.ID, b.ID) })
	}
	return m
}

// runningDomains returns the running domains sorted by (host, name) so
// outputs do not depend on the driver's listing order.
func runningDomains(ds []Domain) []Domain {
	var out []Domain
	for _, d := range ds {
		if d.Running {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b Domain) int {
		return cmp.Or(cmp.Compare(a.HostID, b.HostID), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// uniq returns xs without duplicates, sorted.
func uniq(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckOrphanDomains: every running domain must be backed by a live VM
// record, in a state that may have a domain, placed on the domain's host.
// Otherwise the orchestrator has forgotten a running guest (D2, D3).
func CheckOrphanDomains(s Snapshot) []Violation {
	byName := recordsByName(s.VMs)
	settled := settledHosts(s) // before a host has had time to report, its domains are not yet known
	dests := NewHandovers(s.Ops, s.Time, s.ReportGrace)
	var out []Violation
	for _, d := range runningDomains(s.Domains) {
		if v, ok := orphanDomain(d, byName[d.Name], settled[d.HostID], dests.To, s.Time); ok {
			out = append(out, v)
		}
	}
	sortViolations(out)
	return out
}

// orphanDomain judges one running domain against the records named after it (sorted by ID); settled
// says whether its host's reports are in; dests gives the destinations of a VM's migrations whose
// handover may still be under way (Handovers.To).
func orphanDomain(d Domain, recs []VM, settled bool, dests func(vmID string) []string, t time.Time) (Violation, bool) {
	if d.Asserted {
		return Violation{}, false
	}
	var live, removed []VM
	for _, r := range recs {
		if r.Removed {
			removed = append(removed, r)
		} else {
			live = append(live, r)
		}
	}
	var msg string
	switch {
	case len(live) == 0 && len(removed) > 0:
		msg = fmt.Sprintf("domain %s is running but its VM record %s is removed (expunged)", domainName(d), removed[0].ID)
	case len(live) == 0:
		msg = fmt.Sprintf("domain %s is running but no VM record is named %s", domainName(d), d.Name)
	default:
		var why []string
		for _, r := range live {
			switch {
			case r.State == vm.Stopped && !settled:
				// A start or stop that lost its host leaves the record Stopped; the server cannot
				// see the host until it reconnects, and then its reports adopt the domain.
				continue
			case noDomainState(r.State):
				why = append(why, fmt.Sprintf("record %s is %s", r.ID, r.State))
			case r.HostID != d.HostID && !migratingFrom(r, d.HostID) && !slices.Contains(dests(r.ID), d.HostID):
				why = append(why, fmt.Sprintf("record %s (%s) places it on host %q", r.ID, r.State, r.HostID))
			}
		}
		if len(why) < len(live) {
			return Violation{}, false // some record accounts for the domain
		}
		msg = fmt.Sprintf("domain %s is running but %s", domainName(d), strings.Join(why, "; "))
	}
	return Violation{Invariant: OrphanDomain, Object: "domain:" + d.Name, Time: t, Message: msg}, true
}

// migratingFrom says whether r is a record Migrating away from host: MigrationRequested put host_id on
// the destination and last_host_id on the source (VirtualMachineManagerImpl.migrate), whose domain
// runs until the MigrateCommand hands it over.
func migratingFrom(r VM, host string) bool {
	return r.State == vm.Migrating && r.LastHostID == host && host != ""
}

// migrationKey names the guest a running domain is for the address check: a domain on either host of
// its record's migration is the one guest, on the record's host (the destination while Migrating, the
// source after a migration that failed while the hypervisor's handover may go on).
func migrationKey(d Domain, recs []VM, dests func(vmID string) []string) string {
	for _, r := range recs {
		if !r.Removed && (migratingFrom(r, d.HostID) || slices.Contains(dests(r.ID), d.HostID)) {
			return domainName(Domain{Name: d.Name, HostID: r.HostID})
		}
	}
	return domainName(d)
}

// Handovers are the destinations of the live migrations whose hypervisor handover may still be under
// way, by VM id. The server gives up on a MigrateCommand that times out (its source's agent restarts
// during the memory copy): VirtualMachineManagerImpl.migrate's finally sends the destination a
// cleanup StopCommand it does not wait for and moves the record back to Running on the source
// (OperationFailed to srcHostId). The hypervisor's migration goes on without the agent, as libvirt's
// peer-to-peer migration does: the guest resumes on the destination and stops on the source a moment
// later, and runs there under a record naming the source until the destination's next power report
// moves the record ("Detected out of band VM migration", handlePowerOnReportWithNoPendingJobsOnVM).
// While the migrate call is in flight, and for the report grace after it returned, a domain on its
// destination is the VM's guest (apache/cloudstack@3156c4ba, VirtualMachineManagerImpl.java; see
// TestTimedOutMigrationHandover). Past that, power sync should have followed it: an orphan again.
type Handovers map[string][]string

// To lists the destinations of vmID's migrations in their handover.
func (h Handovers) To(vmID string) []string { return h[vmID] }

// NewHandovers finds the migrations of ops in their handover at t (grace: Snapshot.ReportGrace).
func NewHandovers(ops []ClientOp, t time.Time, grace time.Duration) Handovers {
	var h Handovers
	for _, op := range ops {
		h = h.add(op, t, grace)
	}
	return h
}

// inHandover says whether op is a migration whose handover may be under way at t: called, and not
// returned more than grace before t.
func inHandover(op ClientOp, t time.Time, grace time.Duration) bool {
	return op.Kind == "migrate" && op.VMID != "" && op.HostID != "" && !t.Before(op.Call) &&
		(op.Return.IsZero() || !t.After(op.Return.Add(grace)))
}

// add adds op's destination if it is in its handover at t.
func (h Handovers) add(op ClientOp, t time.Time, grace time.Duration) Handovers {
	if !inHandover(op, t, grace) || slices.Contains(h[op.VMID], op.HostID) {
		return h
	}
	if h == nil {
		h = Handovers{}
	}
	l := append(h[op.VMID], op.HostID)
	slices.Sort(l)
	h[op.VMID] = l
	return h
}

// MigrationHost says whether a running domain on host is live record r's guest wherever else it runs
// too: on either end of r's migration while r is Migrating (host_id the destination, last_host_id the
// source), or on r's host or a destination of r's migrations in their handover (dests: Handovers.To).
// The address check and the address model count such domains as one user.
func MigrationHost(r VM, host string, dests []string) bool {
	switch {
	case r.Removed || host == "":
		return false
	case r.State == vm.Migrating && (host == r.HostID || host == r.LastHostID):
		return true
	}
	return len(dests) > 0 && (host == r.HostID || slices.Contains(dests, host))
}

// noDomainState reports whether a record in this state says no domain should
// be running for it.
func noDomainState(st vm.State) bool {
	switch st {
	case vm.Destroyed, vm.Expunging, vm.Error, vm.Stopped:
		return true
	}
	return false
}

// CheckIPs: a guest address is used by at most one running domain, and the
// pool must hold it for that domain's own VM; otherwise the address was
// released under a running guest and may be (or was) handed out again.
// Addresses outside every pool (link-local, public) are not checked.
func CheckIPs(s Snapshot) []Violation {
	byName := recordsByName(s.VMs)
	pool := map[string][]IP{}
	for _, ip := range s.IPs {
		pool[ip.Address] = append(pool[ip.Address], ip)
	}
	for _, l := range pool {
		slices.SortStableFunc(l, func(a, b IP) int { return cmp.Compare(a.NetworkID, b.NetworkID) })
	}

	dests := NewHandovers(s.Ops, s.Time, s.ReportGrace)
	var out []Violation
	users := map[string][]Domain{}
	for _, d := range runningDomains(s.Domains) {
		for _, addr := range uniq(d.IPs) {
			users[addr] = append(users[addr], d)
		}
		out = append(out, domainIPs(d, byName[d.Name], func(addr string) []IP { return pool[addr] }, s.Time)...)
	}
	for addr, ds := range users {
		if v, ok := sharedIP(addr, ds, func(name string) []VM { return byName[name] }, dests.To, s.Time); ok {
			out = append(out, v)
		}
	}
	sortViolations(out)
	return out
}

// domainIPs judges the addresses of one running domain against the pool (pool: an address's entries,
// sorted by network) and the records named after the domain.
func domainIPs(d Domain, recs []VM, pool func(string) []IP, t time.Time) []Violation {
	// The domain's own records, removed ones included: an expunged VM
	// whose address is still held by its row is an orphan-domain
	// problem, not an address conflict.
	own := map[string]bool{}
	for _, r := range recs {
		own[r.ID] = true
	}
	var out []Violation
	for _, addr := range uniq(d.IPs) {
		entries := pool(addr)
		if len(entries) == 0 || slices.ContainsFunc(entries, func(ip IP) bool { return !ip.Free && own[ip.VMID] }) {
			continue
		}
		var why []string
		for _, ip := range entries {
			if ip.Free {
				why = append(why, fmt.Sprintf("free in the pool of network %s", ip.NetworkID))
			} else {
				why = append(why, fmt.Sprintf("allocated to VM %s in network %s", ip.VMID, ip.NetworkID))
			}
		}
		out = append(out, Violation{
			Invariant: IPConflict,
			Object:    "ip:" + addr,
			Time:      t,
			Message:   fmt.Sprintf("address %s used by running domain %s is %s", addr, domainName(d), strings.Join(why, "; ")),
		})
	}
	return out
}

// sharedIP: an address used by two running domains or more (users, in any order; recs: the records
// named after a domain; dests: as for orphanDomain). The two domains of one guest whose record
// migrates between their hosts, or whose migration's handover may still be under way, are one user:
// libvirt runs the guest on both for a moment while it hands it over.
func sharedIP(addr string, users []Domain, recs func(string) []VM, dests func(vmID string) []string, t time.Time) (Violation, bool) {
	var names, keys []string
	for _, d := range users {
		names = append(names, domainName(d))
		keys = append(keys, migrationKey(d, recs(d.Name), dests))
	}
	if len(uniq(keys)) < 2 {
		return Violation{}, false
	}
	ds := uniq(names)
	return Violation{
		Invariant: IPConflict,
		Object:    "ip:" + addr,
		Time:      t,
		Message:   fmt.Sprintf("address %s used by %d running domains: %s", addr, len(ds), strings.Join(ds, ", ")),
	}, true
}

// deadVolumeState reports whether a volume in this state must no longer be
// open anywhere: its storage may be deleted or reused under the guest.
func deadVolumeState(st string) bool {
	switch st {
	case "Destroy", "Expunging", "Expunged":
		return true
	}
	return false
}

// CheckVolumes: a disk a running domain holds open must have a volume record
// and every record with that path must be live (not Destroy, Expunging,
// Expunged or removed).
func CheckVolumes(s Snapshot) []Violation {
	byPath := map[string][]Volume{}
	for _, v := range s.Volumes {
		byPath[v.Path] = append(byPath[v.Path], v)
	}
	for _, l := range byPath {
		slices.SortStableFunc(l, func(a, b Volume) int { return cmp.Compare(a.ID, b.ID) })
	}
	var out []Violation
	for _, d := range runningDomains(s.Domains) {
		out = append(out, domainVolumes(d, func(path string) []Volume { return byPath[path] }, s.Time)...)
	}
	sortViolations(out)
	return out
}

// domainVolumes judges the disks one running domain holds open (byPath: a path's volume records,
// sorted by ID).
func domainVolumes(d Domain, byPath func(string) []Volume, t time.Time) []Violation {
	if d.Asserted {
		return nil
	}
	var out []Violation
	for _, path := range uniq(d.Disks) {
		recs := byPath(path)
		if len(recs) == 0 {
			out = append(out, Violation{
				Invariant: VolumeInUse, Object: "volume:" + path, Time: t,
				Message: fmt.Sprintf("running domain %s holds %s open but no volume record has that path", domainName(d), path),
			})
			continue
		}
		for _, v := range recs {
			if !deadVolumeState(v.State) && !v.Removed {
				continue
			}
			what := v.State
			if v.Removed {
				what += ", removed"
			}
			out = append(out, Violation{
				Invariant: VolumeInUse, Object: "volume:" + path, Time: t,
				Message: fmt.Sprintf("running domain %s holds %s open but volume %s (VM %s) is %s", domainName(d), path, v.ID, v.VMID, what),
			})
		}
	}
	return out
}

// CheckNetworkLocks: a network's state may only be written by the actor that
// holds its lock-table entry, if anyone holds it. The network DAO write is
// not a compare-and-set, so any other writer silently overwrites (D1).
func CheckNetworkLocks(s Snapshot) []Violation {
	var out []Violation
	for _, c := range s.NetworkChanges {
		if c.LockHolder == "" || c.Actor == c.LockHolder {
			continue
		}
		how := "through the FSM"
		if c.Direct {
			how = "directly, around the FSM"
		}
		out = append(out, Violation{
			Invariant: NetworkLock,
			Object:    "network:" + c.NetworkID,
			Time:      c.Time,
			Message: fmt.Sprintf("%s wrote network %s %s -> %s %s while %s held its lock",
				c.Actor, c.NetworkID, c.From, c.To, how, c.LockHolder),
		})
	}
	sortViolations(out)
	return out
}

// CheckStartFailures: a start that failed must be explained by a disruptive
// fault on something it depended on, or by a concurrent disruptive operation
// on the same VM or one of its networks. Anything else is the orchestrator
// tripping over its own state (e.g. a network left in Shutdown by GC).
func CheckStartFailures(s Snapshot) []Violation {
	var failed []int
	for i, op := range s.Ops {
		if !op.OK && !op.Return.IsZero() && slices.Contains(StartKinds, op.Kind) {
			failed = append(failed, i)
		}
	}
	return startFailures(s, failed)
}

// startFailures judges the failed starts s.Ops[i] for i in failed.
func startFailures(s Snapshot, failed []int) []Violation {
	var out []Violation
	for _, i := range failed {
		op := s.Ops[i]
		if explainedByFault(op, s.Faults, s.ReportGrace) || explainedByOp(op, s.Ops) || leftImplementingByRestart(op, s.NetworkWrites, s.Faults) ||
			movedAfterItsStart(op, s.VMWrites) {
			continue
		}
		obj := "vm:" + op.VMID
		if op.VMID == "" {
			// A deploy can fail before a VM row exists; key on the op then.
			obj = fmt.Sprintf("op:%d", op.ID)
		}
		out = append(out, Violation{
			Invariant: UnexplainedStartFailure,
			Object:    obj,
			Time:      op.Return,
			Message: fmt.Sprintf("%s #%d by %s of VM %s failed with %q; no disruptive fault or concurrent disruptive operation overlaps it",
				op.Kind, op.ID, op.Client, op.VMID, op.Err),
		})
	}
	sortViolations(out)
	return out
}

// overlaps reports whether [a0, a1] and [b0, b1] intersect; a zero end means
// the interval is still open.
func overlaps(a0, a1, b0, b1 time.Time) bool {
	return (a1.IsZero() || !b0.After(a1)) && (b1.IsZero() || !a0.After(b1))
}

func explainedByFault(op ClientOp, faults []Fault, grace time.Duration) bool {
	targets := map[string]bool{"ms": true}
	if op.VMID != "" {
		targets["vm:"+op.VMID] = true
	}
	if op.HostID != "" {
		targets["host:"+op.HostID] = true
	}
	for _, n := range op.NetworkIDs {
		targets["network:"+n] = true
	}
	for _, f := range faults {
		// A host's outage reaches starts placed elsewhere too (the network's router may be on it, stuck
		// Starting), and lasts until the server has the host's reports again; a fault on the VM (a
		// crash, a guest's shutdown) reaches its record only with the host's next reports too (a
		// start in between finds it Running, then power sync stops it under the start).
		hostWide := slices.ContainsFunc(f.Targets, func(t string) bool { return t == "ms" || strings.HasPrefix(t, "host:") })
		end := f.End
		if !end.IsZero() {
			end = end.Add(grace)
		}
		if f.Disruptive && overlaps(op.Call, op.Return, f.Begin, end) &&
			(hostWide || slices.ContainsFunc(f.Targets, func(t string) bool { return targets[t] })) {
			return true
		}
	}
	return false
}

// leftImplementingByRestart: one of the start's networks was, at its call, Implementing since a write
// made before a server restart began, and not written since. The restart killed the job implementing
// it; the next implementNetwork finds it Implementing and fails (NoTransitionException; its cleanup,
// OperationFailed and shutdownNetwork, then frees the network, as the orphaned-network cleanup would
// after job.expire.minutes), however long after the restart's own window of explanation
// (explainedByFault). A network written Implementing after the restart has a live
// implementer; one left Implementing with no restart between is the orchestrator's own doing.
// writes are in time order.
func leftImplementingByRestart(op ClientOp, writes []NetworkChange, faults []Fault) bool {
	if len(writes) == 0 || len(op.NetworkIDs) == 0 {
		return false
	}
	// the writes before the call: one at its very instant is the start's own (in the simulator its job
	// runs at once), so a network the start itself moves on is still judged where it stood
	upTo, _ := slices.BinarySearchFunc(writes, op.Call, func(w NetworkChange, t time.Time) int {
		if w.Time.Before(t) {
			return -1
		}
		return 1
	})
	for _, n := range op.NetworkIDs {
		last := -1
		for i := upTo - 1; i >= 0; i-- {
			if writes[i].NetworkID == n {
				last = i
				break
			}
		}
		if last < 0 || writes[last].To != network.Implementing {
			continue
		}
		since := writes[last].Time
		if slices.ContainsFunc(faults, func(f Fault) bool {
			return f.Disruptive && slices.Contains(f.Targets, "ms") && f.Begin.After(since) && !f.Begin.After(op.Call)
		}) {
			return true
		}
	}
	return false
}

// movedAfterItsStart: a deploy that failed because, once its start completed, another actor moved its
// VM away from Running before the deploy read it again. UserVmManagerImpl's private
// startVirtualMachine (the DeployVMCmd path; apache/cloudstack@00114e8b, server/src/main/java/com/
// cloud/vm/UserVmManagerImpl.java) fails the deploy then ("VM ... unexpectedly went to <state>
// state", ConcurrentOperationException "Failed to deploy VM ..."): a migration the client called, a
// stop or power sync did it, not the orchestrator. What tells: the server's line, within the deploy,
// after the start's OperationSucceeded (Starting -> Running) and a write of the VM from Running by an
// actor other than the one that wrote it Running. A deploy whose start never completed, or whose VM
// only its own start moved, stays unexplained. writes are in history order.
func movedAfterItsStart(op ClientOp, writes []VMChange) bool {
	if op.Kind != "deploy" || op.VMID == "" || !strings.Contains(op.Err, "Failed to deploy VM") {
		return false
	}
	starter, moved := "", false
	for _, w := range writes {
		if w.VMID != op.VMID || w.Time.Before(op.Call) {
			continue
		}
		if !op.Return.IsZero() && w.Time.After(op.Return) {
			break
		}
		switch {
		case w.Unexpected:
			if moved {
				return true
			}
		case w.From == vm.Starting && w.To == vm.Running:
			starter, moved = w.Actor, false
		case starter != "" && w.From == vm.Running && w.To != vm.Running && w.Actor != starter:
			moved = true
		}
	}
	return false
}

func explainedByOp(op ClientOp, ops []ClientOp) bool {
	for _, o := range ops {
		// The client destroyed the VM before (a destroy that failed may have destroyed it too: a
		// restart of the server cancels the job after its DestroyRequested), or its deploy failed and
		// left it in Error: starting it again is refused, rightly.
		if o.ID != op.ID && op.VMID != "" && o.VMID == op.VMID && o.Call.Before(op.Call) &&
			(slices.Contains(destroyKinds, o.Kind) || (!o.OK && !o.Return.IsZero() && o.Kind == "deploy")) {
			return true
		}
		// The client deleted one of its networks before: the API refuses a deploy into a removed
		// network (its networkids names no such entity), and a start of a VM on it cannot implement it.
		if o.Kind == "deleteNetwork" && o.OK && !o.Return.After(op.Call) &&
			slices.ContainsFunc(o.NetworkIDs, func(n string) bool { return slices.Contains(op.NetworkIDs, n) }) {
			return true
		}
		// The network's lock timed out (implementNetwork's acquireInLockTable waits network.lock.timeout,
		// then ConcurrentOperationException "Unable to acquire network configuration") while another
		// operation on the network ran, which may have held it that long: a bound CloudStack sets.
		if o.ID != op.ID && strings.Contains(op.Err, "Unable to acquire network configuration") && overlaps(op.Call, op.Return, o.Call, o.Return) &&
			slices.ContainsFunc(o.NetworkIDs, func(n string) bool { return slices.Contains(op.NetworkIDs, n) }) {
			return true
		}
		if o.ID == op.ID || !slices.Contains(DisruptiveKinds, o.Kind) || !overlaps(op.Call, op.Return, o.Call, o.Return) {
			continue
		}
		if op.VMID != "" && o.VMID == op.VMID {
			return true
		}
		if slices.ContainsFunc(o.NetworkIDs, func(n string) bool { return slices.Contains(op.NetworkIDs, n) }) {
			return true
		}
	}
	return false
}
