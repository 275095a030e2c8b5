package linear

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"iter"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/csconform/csconform/model/history"
)

// Observation formats, as the harness writes them in history.Observe events:
//   - object "vm:N", To "on/live" (or off, dead): the VM's running domain on any host, and its record;
//   - object "ip:A", To "vm:1,vm:7" (or ""): the VMs whose running domains use the address;
//   - object "network:N", To "listed" or "removed": the network's row, looked at once a deleteNetwork
//     was called on it.

// ObserveVM is the To of a VM observation.
func ObserveVM(on, dead bool) string { return VMState{On: on, Dead: dead}.code() }

func (s VMState) code() string {
	c := "off/"
	if s.On {
		c = "on/"
	}
	if s.Dead {
		return c + "dead"
	}
	return c + "live"
}

// Partition is one object's porcupine history.
type Partition struct {
	Object string // vm:3, network:2, ip:10.1.1.10
	Model  string // vm, network, ip
	Ops    []porcupine.Operation
	// Clients names the operations' ClientIds: the actor (client, thread, observer) of each.
	Clients []string
}

// VMKind maps a client operation to the VM model's kind ("" if it has none).
func VMKind(op string) string {
	switch op {
	case "deploy", "start", "startNoRetry":
		return VMStart
	case "stop", "forceStop":
		return VMStop
	case "destroy", "destroyExpunge", "expunge":
		return VMDestroy
	case "migrate":
		return VMMigrate
	case "recover":
		return VMRecover
	}
	return ""
}

type call struct {
	seq    int64
	actor  string
	name   string
	object string
}

// Partitions turns a history into one porcupine history per object. Times are the events' sequence
// numbers: the recorder's order is the order things happened in, which virtual time (where many events
// share an instant) is not.
//
// It takes any events without panicking (history.Read refuses malformed ones before they get here):
// an object's model follows from its name alone (vm:, network:, ip:), so an event whose kind does not
// fit its object's model (an address change on a VM) is left out instead of reaching a model that
// cannot read it; open sections are keyed by object and thread as a pair, so no name can make one
// object's section another's; and an event numbered before an earlier one counts as happening when
// it is read, so that no operation returns before it is called.
func Partitions(events []history.Event) []Partition { return PartitionsOf(slices.Values(events)) }

// PartitionsOf is Partitions of the events a sequence yields: a recorder's history in chunks, read
// where it lies.
func PartitionsOf(events iter.Seq[history.Event]) []Partition {
	b := builder{parts: map[string]*Partition{}, calls: map[int]*call{}, sections: map[section]int{}, failedStarts: map[string][]openStart{}, closers: map[int]string{}, retried: map[string]int64{}, clients: map[string]map[string]int{}, deletes: map[string]bool{},
		hosts: map[string]*hostSeen{}}
	for e := range events {
		if e.Seq <= b.now {
			e.Seq = b.now + 1
		}
		b.now = e.Seq
		b.event(e)
	}
	end := b.now + 1
	// operations that never returned are indeterminate: they may take effect any time after the call
	for _, id := range slices.Sorted(maps.Keys(b.calls)) {
		c := b.calls[id]
		if k := VMKind(c.name); k != "" && modelOf(c.object) == "vm" {
			b.vmOp(c.object, c.actor, k, c.name, Unknown, c.seq, end, nil)
		}
	}
	for _, p := range b.parts {
		for i := range p.Ops {
			if p.Ops[i].Return == open {
				p.Ops[i].Return = end
			}
		}
	}
	out := make([]Partition, 0, len(b.parts))
	for _, k := range slices.Sorted(maps.Keys(b.parts)) {
		p := b.parts[k]
		if len(p.Ops) > 0 {
			p.Clients = make([]string, len(b.clients[k]))
			for actor, id := range b.clients[k] {
				p.Clients[id] = actor
			}
			out = append(out, *p)
		}
	}
	return out
}

// modelOf is the model of an object by its name ("" if none checks it).
func modelOf(object string) string {
	for _, m := range []string{"vm", "network", "ip"} {
		if strings.HasPrefix(object, m+":") {
			return m
		}
	}
	return ""
}

const open = -1

// section names a thread's open critical section on a network.
type section struct{ object, actor string }

type builder struct {
	parts    map[string]*Partition
	calls    map[int]*call
	sections map[section]int // index of the open critical section's op in its object's partition
	// failedStarts: the failed starts left open on each VM, closed by the next call on it that
	// returns ok
	failedStarts map[string][]openStart
	// closers: the calls made on a VM while a failed start was open on it, by op; the first of them
	// to return ok closes the start at its call
	closers map[int]string
	// retried: the sequence number of the API job's last "retrying once" of a start on each VM
	retried map[string]int64
	clients map[string]map[string]int
	now     int64 // the last event's time
	// hosts are the hosts' states as their state events say, for the VM model's staleness bound
	hosts map[string]*hostSeen
	// notUp and lastUpSince are hostsSettle's answer kept as the host events come (every VM
	// observation asks it: a scan of the hosts each time made the build hosts x VMs)
	notUp       int
	lastUpSince time.Time
	// deletes: the networks a deleteNetwork was called on
	deletes map[string]bool
	// quiet counts the faults under way that stop reports (a management-server restart, a fault on
	// a host); while one is, no staleness clock runs. msUpSince: when the last one ended.
	quiet     int
	msUpSince time.Time
}

// openStart is a failed start whose effect may still land: its operation's index in its VM's
// partition, and when its failure was returned.
type openStart struct {
	op       int
	failedAt int64
}

// hostSeen is a host as the history shows it: Up or not, and when it last came back Up after being
// away (zero if it never left), as the harness's recorder counts it for the invariants.
type hostSeen struct {
	up, wasUp bool
	upSince   time.Time
}

// hostsSettle says whether every host is Up and the latest time one of them came back (0: none did).
func (b *builder) hostsSettle() (allUp bool, upSince int64) {
	allUp = b.quiet == 0
	if !b.msUpSince.IsZero() {
		upSince = b.msUpSince.UnixNano()
	}
	allUp = allUp && b.notUp == 0
	if !b.lastUpSince.IsZero() {
		upSince = max(upSince, b.lastUpSince.UnixNano())
	}
	return allUp, upSince
}

// add adds an operation to object's partition, or drops it if model is not the object's (see
// Partitions).
func (b *builder) add(object, model, actor string, in, out any, call, ret int64, meta any) int {
	if modelOf(object) != model {
		return -1
	}
	p := b.parts[object]
	if p == nil {
		p = &Partition{Object: object, Model: model}
		b.parts[object] = p
		b.clients[object] = map[string]int{}
	}
	cl, ok := b.clients[object][actor]
	if !ok {
		cl = len(b.clients[object])
		b.clients[object][actor] = cl
	}
	p.Ops = append(p.Ops, porcupine.Operation{ClientId: cl, Input: in, Output: out, Call: call, Return: ret, Metadata: meta})
	return len(p.Ops) - 1
}

// IsStartRetry says a log line is the API job's retry of a failed start (the reference's
// "Start of VM 21 failed, retrying once: …"; the deploy and start APIs retry once, startNoRetry not).
func IsStartRetry(detail string) bool {
	return strings.HasPrefix(detail, "Start of VM") && strings.Contains(detail, "retrying once")
}

// firstAttempt adds the first attempt of a start call c that the API retried: a failed start of its
// own, which may still boot the domain (its StartCommand held on a cut link, delivered after the
// server gave up on it), so that a stop between it and the retry's boot is no contradiction. Like a
// failed start's, its effect lands before the next call on the VM that returns ok has returned.
func (b *builder) firstAttempt(object string, c *call, ret int64) {
	in := VMInput{Kind: VMStart, Name: c.name + " (its first attempt)"}
	if len(b.failedStarts[object]) > 0 {
		b.add(object, "vm", c.actor, in, Failed, c.seq, ret, "retried")
		return
	}
	b.failedStarts[object] = []openStart{{b.add(object, "vm", c.actor, in, Failed, c.seq, open, "retried"), ret}}
}

// closeFailedStart ends the window of a failed start left open on a VM at the return of the first
// later call on it that returned ok: that call's command went to the host after the StartCommand,
// on the same link, so the host ran it after the boot, and before the call returned (not before it
// was called: a held StartCommand may boot the domain while the call waits in the VM's work queue).
// A later call that failed may have sent the host nothing (advanceStop refuses a VM still Starting:
// "We cannot stop ... when it is in state Starting"), so it leaves the window open. Issue 33: a
// StartCommand held on a link cut 90 s booted the domain after two such refused destroyExpunge
// calls, or, with vm.destroy.forcestop, during a second destroyExpunge queued behind the first's
// forced stop.
func (b *builder) closeFailedStart(e history.Event, c *call) {
	object, ok := b.closers[e.Op]
	if !ok {
		return
	}
	delete(b.closers, e.Op)
	if e.To != "ok" {
		return
	}
	// only the starts that had failed when it was called: one that failed later may land after it
	left := b.failedStarts[object][:0]
	for _, s := range b.failedStarts[object] {
		if s.failedAt < c.seq {
			b.parts[object].Ops[s.op].Return = e.Seq
			continue
		}
		left = append(left, s)
	}
	if len(left) == 0 {
		delete(b.failedStarts, object)
	} else {
		b.failedStarts[object] = left
	}
}

// netClientOp adds a returned client call on a network: a deleteNetwork, and, on a network a
// deleteNetwork was called on, a deploy or allocate into it that returned ok (its first network, the
// one its call names). Histories with no deleteNetwork keep their network partitions as they were.
func (b *builder) netClientOp(e history.Event, c *call) {
	if modelOf(c.object) != "network" {
		return
	}
	switch {
	case c.name == NetDelete:
		out := OK
		if e.To != "ok" {
			out = Failed
		}
		b.add(c.object, "network", c.actor, NetInput{Actor: c.actor, Client: NetDelete, Out: out}, nil, c.seq, e.Seq, e.Detail)
	case (c.name == "deploy" || c.name == "allocate") && e.To == "ok" && b.deletes[c.object]:
		b.add(c.object, "network", c.actor, NetInput{Actor: c.actor, Client: NetNIC}, nil, c.seq, e.Seq, e.Detail)
	}
}

// vmOp adds a client operation on a VM. A destroy is several steps to an observer — the domain stops
// (the record is still live, Stopped), then the record dies — and it stops the VM through the work
// queue up to three times (destroy, then expunge), so a start queued meanwhile can run between its
// stops. It enters the history as three stop parts and its destroy part, all over the call's interval.
func (b *builder) vmOp(object, actor, kind, name string, out Outcome, call, ret int64, meta any) {
	if kind == VMDestroy {
		for i := range 3 {
			b.add(object, "vm", actor, VMInput{Kind: VMStop, Name: fmt.Sprintf("%s (its stop %d)", name, i+1)}, out, call, ret, meta)
		}
	}
	b.add(object, "vm", actor, VMInput{Kind: kind, Name: name}, out, call, ret, meta)
}

func (b *builder) event(e history.Event) {
	switch e.Kind {
	case history.Call:
		name, _, _ := strings.Cut(e.Detail, " ")
		b.calls[e.Op] = &call{seq: e.Seq, actor: e.Actor, name: name, object: e.Object}
		if name == NetDelete && modelOf(e.Object) == "network" {
			b.deletes[e.Object] = true
		}
		if len(b.failedStarts[e.Object]) > 0 {
			b.closers[e.Op] = e.Object
		}
	case history.Return:
		c := b.calls[e.Op]
		if c == nil {
			return
		}
		delete(b.calls, e.Op)
		b.closeFailedStart(e, c)
		b.netClientOp(e, c)
		k := VMKind(c.name)
		if k == "" || modelOf(e.Object) != "vm" {
			return
		}
		if at, ok := b.retried[e.Object]; ok && k == VMStart {
			delete(b.retried, e.Object)
			if at > c.seq {
				b.firstAttempt(e.Object, c, e.Seq)
			}
		}
		out, ret := OK, e.Seq
		if e.To != "ok" {
			out = Failed
			// A failed stop's StopCommand (or a failed start's StartCommand) may still be running on
			// the host: the server gives up on a command when the agent goes away (a graceful restart
			// cancels it at once) and the API says "Unable to stop" or "Unable to start", but the agent
			// finishes what it had started, and a domain it started boots after the answer. Its effect
			// may land after the failure was returned, as an unreturned operation's may. A failed
			// start's, though, lands before the next call on the VM that returns ok has returned (its
			// command the host runs after the boot; see closeFailedStart): it explains no domain that
			// runs again after a later successful stop. (The invariants
			// still judge the record: a failed start's running domain under a record in Error or
			// Stopped is an orphan.)
			ret = open
			if k == VMStart && modelOf(e.Object) == "vm" {
				i := b.add(e.Object, "vm", c.actor, VMInput{Kind: k, Name: c.name}, out, c.seq, ret, e.Detail)
				b.failedStarts[e.Object] = append(b.failedStarts[e.Object], openStart{i, e.Seq})
				return
			}
		}
		b.vmOp(e.Object, c.actor, k, c.name, out, c.seq, ret, e.Detail)
	case history.Fault:
		// no report is processed while the server restarts, nor from a host a fault cuts off (its
		// row may still say Up until the ping timeout): the ghost clock waits, as the invariant's
		hostCut := strings.HasPrefix(e.Object, "host:") && e.To != "stale-report" && e.From != "stale-report" // a late report still flows
		// A peer server's stop is a fault on the hosts it owned, as the invariants' recorder counts it
		// (harness Recorder.hostFaultWithin): their reports stop until they reconnect to a survivor,
		// and the work jobs it ran stay IN_PROGRESS until the survivor's heartbeat passes
		// cluster.heartbeat.threshold (150 s) and onManagementNodeLeft fails them, while
		// VmPowerStateSyncManagerImpl.handlePowerStateReport postpones every report of a VM with a
		// pending work job. The clock waits for the peer's stop and its report grace, as the
		// invariant's does.
		switch {
		case e.To == "ms-restart" || e.To == "peer-stop" || (e.To != "" && hostCut):
			b.quiet++
		case (e.From == "ms-restart" || e.From == "peer-stop" || (e.From != "" && hostCut)) && b.quiet > 0:
			b.quiet--
			b.msUpSince = e.Time
		}
		if e.To == "ms-restart" {
			// The server's threads die with it, holding what they held: their sections stay open
			// (they may have done all they wrote), and the next server's threads, which reuse the
			// names, start sections of their own.
			clear(b.sections)
		}
		kind := e.To
		if kind == "" {
			kind = e.From
		}
		if kind != "crash" && kind != "guest-shutdown" && kind != "host-power-off" && kind != "host-remove" {
			return
		}
		for _, obj := range strings.Split(e.Object, ",") {
			if modelOf(obj) != "vm" {
				continue // a power-off names its host and the VMs whose domains it takes down
			}
			// The domain goes down some time after the fault (a guest's poweroff takes a while), so
			// the operation stays open: it may take effect any time after it began.
			if e.From == "" {
				b.add(obj, "vm", "fault", VMInput{Kind: VMDown, Name: kind}, OK, e.Seq, open, e.Detail)
			}
		}
	case history.Observe:
		switch modelOf(e.Object) {
		case "vm":
			s := VMState{On: strings.HasPrefix(e.To, "on/"), Dead: strings.HasSuffix(e.To, "/dead")}
			in := VMInput{Kind: VMObserve, Seen: s}
			// the harness says what the record was in the detail ("record Running")
			if rec, ok := strings.CutPrefix(e.Detail, "record "); ok && !e.Time.IsZero() {
				in.Record, in.At = rec, e.Time.UnixNano()
				in.HostsUp, in.UpSince = b.hostsSettle()
			}
			b.add(e.Object, "vm", "observer", in, OK, e.Seq, e.Seq, e.Detail)
		case "network":
			b.add(e.Object, "network", "observer", NetInput{Actor: "observer", Client: NetObserve, Seen: e.To}, nil, e.Seq, e.Seq, e.Detail)
		case "ip":
			var users []string
			if e.To != "" {
				users = strings.Split(e.To, ",")
			}
			b.add(e.Object, "ip", "observer", IPInput{Users: users}, nil, e.Seq, e.Seq, e.Detail)
		}
	case history.Log:
		if modelOf(e.Object) == "vm" && IsStartRetry(e.Detail) {
			b.retried[e.Object] = e.Seq
		}
		// A line naming an open call and a VM (the recorder's, for a call whose job was expunged under
		// it) tells a deploy's VM, which its call could not name: the call stays open on that VM.
		if c := b.calls[e.Op]; e.Op != 0 && c != nil && modelOf(c.object) != "vm" && modelOf(e.Object) == "vm" {
			c.object = e.Object
		}
	case history.IP:
		b.add(e.Object, "ip", e.Actor, IPInput{Write: true, From: e.From, To: e.To}, nil, e.Seq, e.Seq, e.Detail)
	case history.Lock:
		id, ok := strings.CutPrefix(e.Object, "networks")
		if !ok {
			return
		}
		key := section{"network:" + id, e.Actor}
		if e.To == "held" {
			if _, re := b.sections[key]; !re {
				b.sections[key] = b.add(key.object, "network", e.Actor, NetInput{Actor: e.Actor, Locked: true}, nil, e.Seq, open, "lock held")
			}
		} else if i, held := b.sections[key]; held {
			b.parts[key.object].Ops[i].Return = e.Seq
			delete(b.sections, key)
		}
	case history.State:
		if id, ok := strings.CutPrefix(e.Object, "host:"); ok {
			b.hostState(id, e)
			return
		}
		if b.haWork(e) {
			return
		}
		if modelOf(e.Object) != "network" {
			return
		}
		w := Transition{From: e.From, To: e.To}
		if i, held := b.sections[section{e.Object, e.Actor}]; held && e.LockHolder == e.Actor {
			op := &b.parts[e.Object].Ops[i]
			in := op.Input.(NetInput)
			in.Writes = append(slices.Clip(in.Writes), w)
			op.Input = in
			return
		}
		b.add(e.Object, "network", e.Actor, NetInput{Actor: e.Actor, Writes: []Transition{w}}, nil, e.Seq, e.Seq, e.Detail)
	}
}

// hostState follows a host's state events (the recorder's rule: coming back Up after the first time
// starts the report grace).
func (b *builder) hostState(id string, e history.Event) {
	h := b.hosts[id]
	if h == nil {
		h = &hostSeen{}
		b.hosts[id] = h
		b.notUp++ // a host first seen counts as not Up until its event says so
	} else if e.From != "" && e.From == e.To {
		return // a row written with its status unchanged (Up -Ping-> Up): no coming back Up
	}
	up := e.To == "Up"
	switch {
	case up && !h.up:
		b.notUp--
	case !up && h.up:
		b.notUp++
	}
	h.up = up
	if h.up {
		if h.wasUp {
			old := h.upSince
			h.upSince = e.Time
			switch {
			case !e.Time.Before(b.lastUpSince):
				b.lastUpSince = e.Time
			case old.Equal(b.lastUpSince): // the latest moved back (a history out of time order): look again
				b.lastUpSince = time.Time{}
				for _, o := range b.hosts {
					if o.upSince.After(b.lastUpSince) {
						b.lastUpSince = o.upSince
					}
				}
			}
		}
		h.wasUp = true
	}
}

// Result is the verdict on one partition.
type Result struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Ops    int    `json:"operations"`
	// Verdict is "ok", "illegal" (no sequential order explains it) or "unknown" (timed out).
	Verdict string `json:"verdict"`
	// Explain is, for an illegal history, the longest order that works and the operation that cannot
	// follow it.
	Explain []string `json:"explain,omitempty"`
	info    porcupine.LinearizationInfo
	ops     []porcupine.Operation
	model   porcupine.Model
	clients []string
}

// Check checks every partition with no staleness bound; each gets at most timeout (0: no limit).
func Check(parts []Partition, timeout time.Duration) []Result {
	return CheckWith(parts, timeout, Bounds{})
}

// CheckWith checks every partition with a run's staleness bounds; each gets at most timeout.
func CheckWith(parts []Partition, timeout time.Duration, bounds Bounds) []Result {
	models := ModelsWith(bounds)
	out := make([]Result, 0, len(parts))
	for _, p := range parts {
		m, ok := models[p.Model]
		if !ok {
			// a partition made by hand with no model: nothing decides it
			out = append(out, Result{Object: p.Object, Model: p.Model, Ops: len(p.Ops), Verdict: "unknown", Explain: []string{"  no model " + p.Model}})
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(m, p.Ops, timeout)
		r := Result{Object: p.Object, Model: p.Model, Ops: len(p.Ops), info: info, ops: p.Ops, model: m, clients: p.Clients}
		switch res {
		case porcupine.Ok:
			r.Verdict = "ok"
		case porcupine.Illegal:
			r.Verdict = "illegal"
			r.Explain = explain(m, p.Ops, info)
		default:
			r.Verdict = "unknown"
		}
		out = append(out, r)
	}
	return out
}

// Illegal is the results that are not linearizable.
func Illegal(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Verdict == "illegal" {
			out = append(out, r)
		}
	}
	return out
}

// Undecided is the results the checker could not decide within its time: neither linearizable nor
// not, and never to be reported as either.
func Undecided(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Verdict == "unknown" {
			out = append(out, r)
		}
	}
	return out
}

// explain replays the longest partial linearization and names the operations that cannot come next.
func explain(m porcupine.Model, ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var best []int
	for _, part := range info.PartialLinearizations() {
		for _, lin := range part {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	var out []string
	state := m.Init()
	done := map[int]bool{}
	repeat := 1
	for _, i := range best {
		op := ops[i]
		_, state = m.Step(state, op.Input, op.Output)
		done[i] = true
		line := "  " + m.DescribeOperation(op.Input, op.Output) + "  =>  " + m.DescribeState(state)
		// the same step again (an observation that saw nothing new) is counted, not repeated
		if n := len(out); n > 0 && strings.TrimSuffix(out[n-1], fmt.Sprintf("  (×%d)", repeat)) == line {
			repeat++
			out[n-1] = fmt.Sprintf("%s  (×%d)", line, repeat)
			continue
		}
		repeat = 1
		out = append(out, line)
	}
	// the earliest-returning operation left out cannot follow
	rest := []int{}
	for i := range ops {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	slices.SortFunc(rest, func(a, b int) int { return cmp.Compare(ops[a].Return, ops[b].Return) })
	for n, i := range rest {
		if n == 3 {
			out = append(out, fmt.Sprintf("  (and %d more)", len(rest)-3))
			break
		}
		op := ops[i]
		lead := "  then, impossible: "
		if n > 0 {
			lead = "            or this: "
		}
		out = append(out, lead+m.DescribeOperation(op.Input, op.Output))
		if n == 0 {
			out = append(out, ghostWhy(state, op.Input)...)
		}
	}
	return out
}

// ghostWhy says why an observation that agrees with the state cannot follow it: the staleness bound.
// The VM model's state is the set of states it may be in.
func ghostWhy(state, input any) []string {
	in, isVM := input.(VMInput)
	states, ok := state.([]any)
	if !ok || !isVM || in.Kind != VMObserve {
		return nil
	}
	for _, st := range states {
		s, ok := st.(VMState)
		if !ok || in.Seen.On != s.On || in.Seen.Dead != s.Dead || s.GhostSince == 0 {
			continue
		}
		d := time.Duration(in.At - s.GhostSince).Round(time.Second)
		return []string{fmt.Sprintf("            (its record has said Running with no domain for %s, on hosts whose reports flow: longer than power sync may take)", d)}
	}
	return nil
}

// FileName is the name of the partition's visualization file.
func (r Result) FileName() string {
	return "partition-" + strings.NewReplacer(":", "-", "/", "-").Replace(r.Object) + ".html"
}

// Visualize writes porcupine's HTML for one partition (use it for failing partitions only).
func (r Result) Visualize(path string) error { return r.VisualizeAs(path, "", nil) }

// Window is a stretch of a history (event sequence numbers) shown beside the operations in a
// visualization: a fault, say.
type Window struct {
	Tag         string
	Start, End  int64
	Description string
}

// VisualizeAs writes porcupine's HTML of the partition titled title (porcupine's own when "") with
// windows as annotations, so a reader sees which fault was on while the operations ran.
func (r Result) VisualizeAs(path, title string, windows []Window) error {
	return r.VisualizeWith(path, Visual{Title: title, Windows: windows})
}

// Visual is what a visualization shows beside porcupine's own drawing.
type Visual struct {
	// Title is the page's title (porcupine's own when "").
	Title string
	// Windows are shown as annotations: which fault was on while the operations ran.
	Windows []Window
	// Clock, when set, is the time of the history event of a sequence number, as the reports
	// print it ("+00:01:09.116"): a time axis under the operations.
	Clock func(seq int64) (string, bool)
}

// porcupine's page, and what VisualizeWith makes of it: the rows named after the actors, in a
// margin measured on those names (porcupine measures the row numbers, so "Work-Job-Executor-4" was
// cut to "cutor-4"), and a time axis.
const (
	pageLabel   = "text.textContent = i < realClients ? i : sortedTags[i - realClients]"
	pageMeasure = "const tag = i < realClients ? i.toString() : sortedTags[i - realClients]"
	pageHeight  = "const canvasHeight = 2 * PADDING + BOX_HEIGHT * nClient + BOX_SPACE * (nClient - 1)"
	pageDrawn   = "bgRect.addEventListener('click', handleBgClick)"
	// axisHeight is the room under the rows for the time axis.
	axisHeight = 34
	// timeAxis labels the calls' and returns' positions with their time, one label per 90 pixels
	// at most so that they never overlap (CLOCK: original timestamp -> time).
	timeAxis = `
  { // csconform: the time of the operations' calls and returns, along the bottom
    const marks = []
    for (const partition of coreHistory) {
      for (const el of partition.History) {
        marks.push([t0x + xPos[el.Start], CLOCK[el.OriginalStart]], [t0x + xPos[el.End], CLOCK[el.OriginalEnd]])
      }
    }
    marks.sort((a, b) => a[0] - b[0])
    const axisY = canvasHeight - PADDING - 4
    svgadd(bg, 'line', {x1: t0x, y1: axisY - 16, x2: canvasWidth - PADDING, y2: axisY - 16, class: 'divider'})
    let last = -Infinity
    for (const [x, label] of marks) {
      if (label === undefined || x - last < 90) continue
      last = x
      svgadd(bg, 'line', {x1: x, y1: axisY - 20, x2: x, y2: axisY - 12, class: 'divider'})
      const t = svgadd(bg, 'text', {x: x, y: axisY, 'text-anchor': 'middle', 'font-size': '11px'})
      t.textContent = label
    }
  }
`
)

// VisualizeWith writes porcupine's HTML of the partition with what v adds.
func (r Result) VisualizeWith(path string, v Visual) error {
	m := r.model
	if m.Step == nil {
		m = Models[r.Model]
	}
	// porcupine's tooltip puts an operation's metadata and a state's description into innerHTML,
	// and both carry history text (a history may come from a bug report): escape them for the page
	// only (the operations' labels go to textContent, and Explain's text is for a terminal).
	describeState := m.DescribeState
	m.DescribeState = func(state any) string {
		if describeState == nil {
			return html.EscapeString(fmt.Sprintf("%v", state))
		}
		return html.EscapeString(describeState(state))
	}
	describeMeta := m.DescribeOperationMetadata
	m.DescribeOperationMetadata = func(info any) string {
		switch {
		case describeMeta != nil:
			return html.EscapeString(describeMeta(info))
		case info == nil:
			return ""
		}
		return html.EscapeString(fmt.Sprintf("%v", info))
	}
	info := r.info
	var notes []porcupine.Annotation
	for _, w := range v.Windows {
		notes = append(notes, porcupine.Annotation{Tag: w.Tag, Start: w.Start, End: w.End, Description: w.Description, BackgroundColor: "#f6d5d5"})
	}
	if len(notes) > 0 {
		info.AddAnnotations(notes)
	}
	if err := porcupine.VisualizePath(m, info, path); err != nil || (v.Title == "" && len(r.clients) == 0 && v.Clock == nil) {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if v.Title != "" {
		b = bytes.Replace(b, []byte("<title>Porcupine</title>"), []byte("<title>"+html.EscapeString(v.Title)+"</title>"), 1)
	}
	page := string(b)
	if len(r.clients) > 0 {
		// porcupine numbers its rows by ClientId; name them after the actors
		names, _ := json.Marshal(r.clients)
		page = strings.Replace(page, pageLabel, "text.textContent = i < realClients ? ("+string(names)+"[i] ?? i) : sortedTags[i - realClients]", 1)
		page = strings.Replace(page, pageMeasure, "const tag = i < realClients ? String("+string(names)+"[i] ?? i) : sortedTags[i - realClients]", 1)
	}
	if v.Clock != nil {
		clock := map[string]string{}
		for _, op := range r.ops {
			for _, seq := range []int64{op.Call, op.Return} {
				if c, ok := v.Clock(seq); ok {
					clock[strconv.FormatInt(seq, 10)] = c
				}
			}
		}
		js, _ := json.Marshal(clock)
		page = strings.Replace(page, pageHeight, pageHeight+fmt.Sprintf(" + %d", axisHeight), 1)
		page = strings.Replace(page, pageDrawn, pageDrawn+"\n  const CLOCK = "+string(js)+timeAxis, 1)
	}
	return os.WriteFile(path, []byte(page), 0o644)
}

// threadName is an actor without the prefix several management servers give their threads
// ("ms2:HA-Worker-1" is ms2's HA-Worker-1).
func threadName(actor string) string {
	if name, ok := strings.CutPrefix(actor, "ms"); ok {
		if i := strings.IndexByte(name, ':'); i > 0 && strings.Trim(name[:i], "0123456789") == "" {
			return name[i+1:]
		}
	}
	return actor
}

// haWork turns the VM work jobs the HA manager's worker submits (a restart's forced stop and its
// start, CloudStack's "HA-Worker-N" threads) into operations on the VM: the server moves the VM with
// no client call, and either may fail, so their outcome is left open.
func (b *builder) haWork(e history.Event) bool {
	if !strings.HasPrefix(e.Object, "job:") || e.From != "" || !strings.HasPrefix(threadName(e.Actor), "HA-Worker") {
		return false
	}
	cmd, inst, ok := strings.Cut(e.Detail, " VirtualMachine:")
	kind := map[string]string{"VmWorkStart": VMStart, "VmWorkStop": VMStop}[cmd]
	if !ok || kind == "" {
		return false
	}
	b.add("vm:"+inst, "vm", e.Actor, VMInput{Kind: kind, Name: "ha:" + cmd}, Unknown, e.Seq, open, e.Detail)
	return true
}
