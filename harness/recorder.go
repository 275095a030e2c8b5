// Package harness runs a scenario in a World through one runner (Run: setup, steps, until: conditions
// on the snapshot and the history, settle, finish, expectations), records the history (client
// operations with call and return times, every state change with its actor, faults, log lines),
// checks the invariants after every step and at quiescence, and reports. The in-process cluster
// (simulator, live and libvirt substrates) is here; the worlds outside the process and the registry
// by --driver name are in harness/world.
package harness

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// Recorder is the run's history and what the checkers need from it.
type Recorder struct {
	// asserted: the domains a caller's forced stop asserted stopped (detect/asserted.go)
	asserted detect.AssertedStops

	// mu guards every field below when the world's tasks are real goroutines (drivers/live): events
	// come from the server's threads, the agents and the checker at once. It is never held across a
	// call out of the recorder.
	mu     sync.Mutex
	hist   Events // the history (History)
	Ops    []invariant.ClientOp
	Faults []invariant.Fault
	// netChanges are network state writes not yet checked; netWrites all of them (a failed start is
	// judged on where its networks stood at its call).
	netChanges, netWrites []invariant.NetworkChange
	// vmWrites are the VM state writes and the deploys' "unexpectedly went to" lines (a failed
	// deploy is judged on who moved its VM after its start completed).
	vmWrites []invariant.VMChange
	dirty    bool
	// touched are the objects that history events named since the last observation; emit collects
	// them in pendingTouched and a snapshot moves them here, so that only the checker reads touched.
	touched        map[string]bool
	pendingTouched map[string]bool
	// watchedNets are the networks a deleteNetwork was called on, by id in id order: the observer
	// looks at their rows (listed or removed) to hold the delete to its answer. A call adds to
	// pendingWatch, and a snapshot moves it here, as it does the touched objects.
	watchedNets  []int64
	pendingWatch []int64
	// upSince is when each host last came back Up; wasUp, which hosts were Up once.
	upSince map[string]time.Time
	wasUp   map[string]bool
	// observed is the last observation written per object.
	observed map[string]string
	opSeq    int
	// opsVer and faultsVer count the changes to Ops and Faults: an incremental check re-judges the
	// start failures only when they moved.
	opsVer, faultsVer uint64
	clock             func() time.Time
	// notify, when someone waits for the next event (Next), is closed by the next emit.
	notify chan struct{}
}

// Next returns a channel closed at the next event recorded (real worlds wait on it instead of
// polling; the simulator never asks, so its runs do not pay for it).
func (r *Recorder) Next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notify == nil {
		r.notify = make(chan struct{})
	}
	return r.notify
}

// NewRecorder returns an empty history whose events without a time get clock's.
func NewRecorder(clock func() time.Time) *Recorder { return &Recorder{clock: clock} }

// Emit implements history.Sink.
func (r *Recorder) Emit(e history.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(e)
}

func (r *Recorder) emit(e history.Event) {
	if e.Time.IsZero() {
		e.Time = r.clock()
	}
	e.Seq = int64(r.hist.Len() + 1)
	r.hist.add(e)
	if r.notify != nil {
		close(r.notify)
		r.notify = nil
	}
	if e.Kind != history.Log && e.Kind != history.Observe && e.Kind != history.Violation {
		r.dirty = true
		for _, o := range strings.Split(e.Object, ",") {
			r.touch(o)
		}
	}
	// a host that comes back Up (not its first time) has a report grace; see invariant.Host.UpSince.
	// A row written with its status unchanged (Up -Ping-> Up) is no coming back.
	if h, ok := strings.CutPrefix(e.Object, "host:"); ok && e.Kind == history.State && e.To == "Up" && e.From != "Up" {
		if r.upSince == nil {
			r.upSince = map[string]time.Time{}
		}
		if r.wasUp[h] {
			r.upSince[h] = e.Time
		}
		if r.wasUp == nil {
			r.wasUp = map[string]bool{}
		}
		r.wasUp[h] = true
	}
	if e.Kind == history.State && strings.HasPrefix(e.Object, "network:") {
		c := invariant.NetworkChange{Time: e.Time, NetworkID: strings.TrimPrefix(e.Object, "network:"),
			From: network.State(e.From), To: network.State(e.To), Actor: e.Actor, LockHolder: e.LockHolder, Direct: e.Direct}
		r.netChanges = append(r.netChanges, c)
		r.netWrites = append(r.netWrites, c)
	}
	if id, ok := strings.CutPrefix(e.Object, "vm:"); ok {
		switch {
		case e.Kind == history.State:
			r.vmWrites = append(r.vmWrites, invariant.VMChange{Time: e.Time, VMID: id, From: vm.State(e.From), To: vm.State(e.To), Actor: e.Actor})
		case e.Kind == history.Log && strings.Contains(e.Detail, unexpectedlyWentTo):
			// UserVmManagerImpl's "VM <vm> unexpectedly went to <state> state" (impl/api.go DeployVirtualMachine)
			st, _, _ := strings.Cut(e.Detail[strings.LastIndex(e.Detail, unexpectedlyWentTo)+len(unexpectedlyWentTo):], " ")
			r.vmWrites = append(r.vmWrites, invariant.VMChange{Time: e.Time, VMID: id, To: vm.State(st), Actor: e.Actor, Unexpected: true})
		}
	}
}

// unexpectedlyWentTo is the deploy's line when the VM its start left is not Running.
const unexpectedlyWentTo = " unexpectedly went to "

// BeginOp records a client call and returns its id.
func (r *Recorder) BeginOp(client, kind, vmID, hostID string, networks []string, detail string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opSeq++
	r.opsVer++
	r.Ops = append(r.Ops, invariant.ClientOp{ID: r.opSeq, Client: client, Kind: kind, VMID: vmID, HostID: hostID, NetworkIDs: networks, Call: r.clock()})
	obj := ""
	if vmID != "" {
		obj = "vm:" + vmID
	} else if len(networks) > 0 {
		obj = "network:" + networks[0]
	}
	r.emit(history.Event{Actor: client, Kind: history.Call, Object: obj, Op: r.opSeq, Detail: kind + " " + detail})
	if kind == "deleteNetwork" && len(networks) > 0 {
		if n, err := strconv.ParseInt(networks[0], 10, 64); err == nil {
			r.pendingWatch = append(r.pendingWatch, n)
		}
	}
	return r.opSeq
}

// EndOp records the return of a client call. A call whose job was expunged under it (the job GC of
// a short job.expire.minutes) has no outcome the client can know: it stays open, as a call cut by a
// dead server does (the linearizability models let it take effect any time; the start-failure
// invariant does not count it), and a log line says why.
func (r *Recorder) EndOp(id int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := r.op(id)
	if gone := (*impl.JobGoneError)(nil); errors.As(err, &gone) {
		// the op's id lets the VM's history keep the open call (a deploy's call names no VM)
		e := history.Event{Actor: op.Client, Kind: history.Log, Level: "WARN", Op: id, Detail: op.Kind + ": " + err.Error() + ": its outcome is unknown"}
		if op.VMID != "" {
			e.Object = "vm:" + op.VMID
		}
		r.emit(e)
		return
	}
	op.Return = r.clock()
	op.OK = err == nil
	if op.Kind == "deleteNetwork" && len(op.NetworkIDs) > 0 {
		r.touch("network:" + op.NetworkIDs[0]) // look at the row again once the answer is in
	}
	e := history.Event{Actor: op.Client, Kind: history.Return, Op: id, To: "ok", Detail: op.Kind}
	if op.VMID != "" {
		e.Object = "vm:" + op.VMID
	}
	if err != nil {
		op.Err = err.Error()
		e.To, e.Detail = "failed", op.Kind+": "+err.Error()
	}
	r.emit(e)
}

// SetOpVM names the VM of an op once it is known (deploy), and its host ("" for either: as it was).
func (r *Recorder) SetOpVM(id int, vmID, hostID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := r.op(id)
	if vmID != "" {
		op.VMID = vmID
	}
	if hostID != "" {
		op.HostID = hostID
	}
}

// opHost is the host an op names so far ("" none).
func (r *Recorder) opHost(id int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Ops[r.opIndex(id)].HostID // not op(): a read, which must not bump opsVer
}

// op is the op with that id; the caller holds mu.
func (r *Recorder) op(id int) *invariant.ClientOp {
	r.opsVer++ // the caller may write through the pointer
	return &r.Ops[r.opIndex(id)]
}

func (r *Recorder) opIndex(id int) int {
	// BeginOp appends in id order: a search, not a scan (a deploy of thousands of VMs ends thousands of ops)
	if i, ok := slices.BinarySearchFunc(r.Ops, id, func(o invariant.ClientOp, id int) int { return cmp.Compare(o.ID, id) }); ok {
		return i
	}
	panic(fmt.Sprintf("no op %d", id))
}

// hostFaultWithin says whether a disruptive fault on a host is on, or ended less than d before now.
func (r *Recorder) hostFaultWithin(now time.Time, d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.Faults {
		// a peer server's stop is a fault on the hosts it owned: their reports stop until they are
		// connected to another server
		if !f.Disruptive || (f.Kind != "peer-stop" && !slices.ContainsFunc(f.Targets, func(t string) bool { return strings.HasPrefix(t, "host:") })) {
			continue
		}
		if f.End.IsZero() || now.Sub(f.End) < d {
			return true
		}
	}
	return false
}

// BeginFault records a fault; EndFault closes it.
func (r *Recorder) BeginFault(kind string, disruptive bool, detail string, targets ...string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faultsVer++
	r.Faults = append(r.Faults, invariant.Fault{Kind: kind, Targets: targets, Begin: r.clock(), Disruptive: disruptive})
	r.emit(history.Event{Actor: "fault", Kind: history.Fault, Object: strings.Join(targets, ","), To: kind, Detail: detail})
	return len(r.Faults) - 1
}

// quietSince is when the last fault ended (zero: none has), and false while a fault is on.
func (r *Recorder) quietSince() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, f := range r.Faults {
		if f.End.IsZero() {
			return time.Time{}, false
		}
		if f.End.After(last) {
			last = f.End
		}
	}
	return last, true
}

// serverQuietSince is quietSince over the management servers' faults only (ms-restart, peer-stop):
// while a server is down its duties (the job GC) wait, a host's fault holds none of them up.
func (r *Recorder) serverQuietSince() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, f := range r.Faults {
		if f.Kind != "ms-restart" && f.Kind != "peer-stop" {
			continue
		}
		if f.End.IsZero() {
			return time.Time{}, false
		}
		if f.End.After(last) {
			last = f.End
		}
	}
	return last, true
}

// EndFault closes a fault.
func (r *Recorder) EndFault(i int, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faultsVer++
	r.Faults[i].End = r.clock()
	r.emit(history.Event{Actor: "fault", Kind: history.Fault, Object: strings.Join(r.Faults[i].Targets, ","), From: r.Faults[i].Kind, Detail: detail})
}

// Trail returns the history events that touched any of objects up to t, for a violation's "steps that
// led to it": state changes, IPs, calls, returns, faults and the log lines about those objects.
func (r *Recorder) Trail(objects []string, until time.Time, max int) []history.Event {
	var out []history.Event
	for e := range r.History().All() {
		if e.Time.After(until) {
			break
		}
		for _, o := range objects {
			if o != "" && (e.Object == o || strings.Contains(e.Object, o+",") || strings.HasSuffix(e.Object, ","+o)) {
				out = append(out, e)
				break
			}
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// SortViolations orders violations by time, then invariant and object.
func SortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		if !vs[i].Time.Equal(vs[j].Time) {
			return vs[i].Time.Before(vs[j].Time)
		}
		if vs[i].Invariant != vs[j].Invariant {
			return vs[i].Invariant < vs[j].Invariant
		}
		return vs[i].Object < vs[j].Object
	})
}

// History is the history so far. Events are only ever appended, so what it returns stays valid
// while other tasks go on emitting.
func (r *Recorder) History() Events {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist.snapshot()
}

// faults is a copy of the faults so far.
func (r *Recorder) faults() []invariant.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.Faults)
}

// Fault is a copy of fault i.
func (r *Recorder) Fault(i int) invariant.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Faults[i]
}

// takeDirty says whether a state-changing event came since the last call.
func (r *Recorder) takeDirty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dirty
	r.dirty = false
	return d
}

// FillSnapshot copies what the checks need from the history into s: the network writes not yet
// checked and all of them, the client operations and the faults.
func (r *Recorder) FillSnapshot(s *invariant.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.NetworkChanges = r.netChanges[:len(r.netChanges):len(r.netChanges)]
	s.NetworkWrites = r.netWrites[:len(r.netWrites):len(r.netWrites)]
	s.VMWrites = r.vmWrites[:len(r.vmWrites):len(r.vmWrites)]
	s.Faults = append([]invariant.Fault(nil), r.Faults...)
	s.Ops = append([]invariant.ClientOp(nil), r.Ops...)
	r.moveTouched()
}

// takeTouched moves the objects events named since the last check to touched (fillSnapshot does
// the same for a whole snapshot).
func (r *Recorder) takeTouched() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.moveTouched()
}

// touch marks an object for the next observation; r.mu is held.
func (r *Recorder) touch(o string) {
	if r.pendingTouched == nil {
		r.pendingTouched = map[string]bool{}
	}
	r.pendingTouched[o] = true
}

// moveTouched moves pendingTouched into touched, and pendingWatch into watchedNets; r.mu is held.
func (r *Recorder) moveTouched() {
	for _, n := range r.pendingWatch {
		if i, found := slices.BinarySearch(r.watchedNets, n); !found {
			r.watchedNets = slices.Insert(r.watchedNets, i, n)
		}
	}
	r.pendingWatch = r.pendingWatch[:0]
	if len(r.pendingTouched) > 0 {
		if r.touched == nil {
			r.touched = map[string]bool{}
		}
		for o := range r.pendingTouched {
			r.touched[o] = true
		}
		clear(r.pendingTouched)
	}
}

// pendingNetChanges are the network writes not yet checked.
func (r *Recorder) pendingNetChanges() []invariant.NetworkChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.netChanges[:len(r.netChanges):len(r.netChanges)]
}

// HostUpSince is when host h last came back Up (zero: never away).
func (r *Recorder) HostUpSince(h string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.upSince[h]
}

// lastChange is the time of the last event other than a log line, an observation or a violation.
func (r *Recorder) lastChange() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := range r.hist.Backward() {
		if k := e.Kind; k != history.Log && k != history.Observe && k != history.Violation {
			return e.Time
		}
	}
	return time.Time{}
}

// checked drops the first n network writes: a check has seen them.
func (r *Recorder) checked(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n >= len(r.netChanges) {
		r.netChanges = nil
		return
	}
	r.netChanges = append([]invariant.NetworkChange(nil), r.netChanges[n:]...)
}
