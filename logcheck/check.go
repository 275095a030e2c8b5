package logcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/linear"
)

// Check names.
const (
	CheckNetworkLock     = "network-lock"                      // a network written by a thread while another held its lock (D1)
	CheckReleasedRunning = "released-while-running"            // resources released, then the host reports the domain on (D2, D3)
	CheckStuck           = "stuck-in-transition"               // an object left in a transitional state
	CheckMissing         = "missing-never-reconciled"          // a VM reported missing that never settled
	CheckNetworkDown     = "network-shutdown-under-running-vm" // a network shut down while a VM on it runs
	CheckLinearNetwork   = "linearizable-network"              // porcupine, the network model
	CheckLinearIP        = "linearizable-ip"                   // porcupine, the guest-IP model
	CheckTransitionGuard = "transition-guard"                  // model/guard: a transition CloudStack does not allow then
)

// Checks lists every check with the fact kinds it needs (all of them, or any of the alternatives
// in one entry separated by "|"), whether it needs their times (a duration or a setting's delay; the
// others read the lines' order only, which a log without timestamps keeps), and what it means.
var Checks = []struct {
	Name      string
	Needs     []string
	NeedsTime bool
	Doc       string
}{
	{CheckNetworkLock, []string{KLock, KNetTransition}, false, "a network's state written by one thread while another holds its lock"},
	{CheckReleasedRunning, []string{KRelease + "|" + KIP, KPowerUpdate + "|" + KUnknownDomain}, false, "a VM's resources released while a later power report shows its domain on"},
	{CheckStuck, []string{KVMTransition + "|" + KNetTransition}, true, "a VM or network left in a transitional state longer than --stuck"},
	{CheckMissing, []string{KMissing, KVMTransition}, true, "a Running VM reported missing and never reconciled within --stuck"},
	{CheckNetworkDown, []string{KNetTransition, KIP, KVMTransition}, false, "a network shut down while a Running VM holds an address in it"},
	{CheckLinearNetwork, []string{KLock, KNetTransition}, false, "porcupine: every network's lock sections and writes chain"},
	{CheckLinearIP, []string{KIP}, false, "porcupine: every guest IP's holders chain"},
	{CheckTransitionGuard, []string{KVMTransition + "|" + KNetTransition + "|" + KHostTransition}, true, "a state change CloudStack allows only by another thread, for another reason, or later (model/guard)"},
}

// Ref is one log line: where and what.
type Ref struct {
	Origin string    `json:"origin"`
	Time   time.Time `json:"time"`
	Text   string    `json:"text"`
}

// lref is a line kept by the checker: the entry itself, its Ref made only for a report.
type lref struct{ e *Entry }

func (l lref) ref() Ref {
	if l.e == nil {
		return Ref{}
	}
	return Ref{Origin: l.e.Origin(), Time: l.e.Time, Text: l.e.Raw}
}

func refs(ls []lref) []Ref {
	out := make([]Ref, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.ref())
	}
	return out
}

// Finding is one violation with its evidence.
type Finding struct {
	Check string `json:"check"`
	// Invariant is Check again, under the key every csconform JSON document names a violation by
	// (internal/schema).
	Invariant string    `json:"invariant"`
	Object    string    `json:"object"`
	Time      time.Time `json:"time"`
	Message   string    `json:"message"`
	Evidence  []Ref     `json:"evidence"`
	Timeline  []Ref     `json:"timeline,omitempty"`
}

// Coverage is, per check, whether the log carried the lines it needs.
type Coverage struct {
	Check     string   `json:"check"`
	Decidable bool     `json:"decidable"`
	Missing   []string `json:"missing,omitempty"` // fact kinds the log did not carry
	Findings  int      `json:"findings"`
	Doc       string   `json:"doc"`
	Note      string   `json:"note,omitempty"`
}

// Options tune the checker.
type Options struct {
	Since, Until time.Time
	// Stuck is how long an object may stay in a transitional state, or a missing VM unreconciled,
	// before the end of the log, for a finding (default 30 min).
	Stuck time.Duration
	// LinearChunk is how many events an object's porcupine history gathers before it is checked
	// at its next quiescent point (no lock held on it) and restarted from the state it reached:
	// memory stays bounded by the open objects, not by the log's length (default 256).
	LinearChunk int
	// LinearTimeout bounds each partition's check (default 10 s).
	LinearTimeout time.Duration
	// Timeline is how many lines around a finding are kept per object (default 12).
	Timeline int
	// Guard is the settings the transition guards read (a zero value: not known, those guards say
	// NOT DECIDABLE).
	Guard guard.Config
	// Events, if set, receives every extracted event as it streams by (csconform logcheck --events
	// writes them as a model/history JSON-lines file), with the line it came from.
	Events func(e history.Event, origin string)
}

type objState struct {
	state    string
	since    time.Time
	timed    bool // the line of the last transition had a time (since is its time)
	ref      lref
	released *Entry // VM: resources released, not started since
	// asserted: a caller's forced stop (stopVirtualMachine forced=true) released the VM although its
	// host could not be reached — CloudStack's documented meaning (apache/cloudstack#6798), the
	// operator's assertion that the domain is gone. Until a power report shows the domain off, its
	// releases are not evidence against the server (as the in-process checkers, detect/asserted.go).
	asserted *Entry
	missing  *Entry // VM: reported missing while Running, not reconciled since
	expunged *Entry // VM: record gone
	// onAfter is a power report that showed the domain on after its resources were released. It is
	// a finding unless a later report finds the VM missing: then it was a stale report, collected
	// before the release and processed after it (a domain the release did not leave running).
	onAfter *pendingFinding
	ring    []lref // recent lines about the object, a circular buffer from next
	next    int
}

// timeline is the ring in order.
func (o *objState) timeline() []lref {
	return append(slices.Clone(o.ring[o.next:]), o.ring[:o.next]...)
}

type pendingFinding struct {
	t        time.Time
	msg      string
	evidence []lref
}

type lockHold struct {
	actor string
	ref   lref
}

// Checker judges facts as they stream by.
type Checker struct {
	opt      Options
	objs     map[string]*objState
	locks    map[string]lockHold          // network key -> holder
	netVMs   map[string]map[string]*Entry // network -> VMs holding an address in it -> the allocation
	counts   map[string]int64
	timed    map[string]int64 // facts of each kind whose line had a time
	found    map[string]bool  // check|object already reported
	Findings []Finding
	linear   map[string][]history.Event // per object: its porcupine history since the last check
	linNote  string
	// apiJobs: the API jobs in progress by id (their command and VM)
	apiJobs map[string]apiJob
	// forcedCleanup: the threads running the cleanup of a forced stop (forcedCleanupLine), until
	// their next VM transition
	forcedCleanup map[string]bool
	seq           int64
	evSeq         int64
	first         time.Time
	last          time.Time
	// guards judges every transition the log shows; guardSeq numbers its events and guardRing keeps
	// the lines of the last ones, for a violation's evidence
	guards    *guard.Checker
	guardSeq  int64
	guardRing []lref
}

// guardRingSize is how many recent lines a guard violation's evidence can point at.
const guardRingSize = 8192

// NewChecker returns a checker.
func NewChecker(o Options) *Checker {
	if o.Stuck == 0 {
		o.Stuck = 30 * time.Minute
	}
	if o.LinearChunk == 0 {
		o.LinearChunk = 256
	}
	if o.LinearTimeout == 0 {
		o.LinearTimeout = 10 * time.Second
	}
	if o.Timeline == 0 {
		o.Timeline = 12
	}
	gcfg := o.Guard
	gcfg.FromLog = true // a log names a work job by its thread's context, not by its VM
	return &Checker{opt: o, objs: map[string]*objState{}, locks: map[string]lockHold{}, counts: map[string]int64{}, timed: map[string]int64{}, found: map[string]bool{},
		linear: map[string][]history.Event{}, netVMs: map[string]map[string]*Entry{}, apiJobs: map[string]apiJob{}, forcedCleanup: map[string]bool{},
		guards: guard.NewChecker(gcfg), guardRing: make([]lref, guardRingSize)}
}

// guard hands the transition guards one event of the line r.
func (c *Checker) guard(ev history.Event, r lref) {
	c.guardSeq++
	ev.Seq = c.guardSeq
	c.guardRing[c.guardSeq%guardRingSize] = r
	c.guards.Add(ev)
}

// guardLine hands the guards the lines they read that are no fact: a host's VM state report (one per
// ping) and the agent monitor's ping-timeout decision.
func (c *Checker) guardLine(e *Entry) {
	m := e.Msg
	var object string
	switch {
	case strings.HasPrefix(m, "Process VM state report") || strings.HasPrefix(m, "Process host VM state report"):
		h := strings.TrimSuffix(strings.TrimSuffix(afterFirst(m, "host: "), "."), ",")
		if f := strings.Fields(h); len(f) > 0 {
			object = "host:" + strings.TrimSuffix(strings.TrimSuffix(f[0], ","), ".")
		}
	case strings.HasPrefix(m, "Ping timeout for agent"):
		if f := strings.Fields(m); len(f) > 4 {
			object = "host:" + strings.TrimSuffix(f[4], ",")
		}
	default:
		return
	}
	if object == "host:" {
		return
	}
	c.guard(history.Event{Time: e.Time, Actor: e.Thread, Kind: history.Log, Object: object, Detail: m}, lref{e})
}

func afterFirst(s, sep string) string {
	if i := strings.Index(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return ""
}

type apiJob struct{ cmd, vm string }

// forcedCleanupLine is advanceStop's line when a forced stop finds the VM in a state with no
// StopRequested row (Starting, Migrating) and releases it through cleanup instead. It names no VM: the
// releases its thread logs next are the forced stop's.
const forcedCleanupLine = "moving on because it's forced stop"

// forcedByCaller says whether a force-stop release line of vm may be a stop API call's: a StopVMCmd
// (or StopVMCmdByAdmin) of the VM is in progress, and the line is the forced release's own, or a
// release by the cleanup a forced stop of a Starting VM runs on its thread (actor). A destroy's
// forced stop alone (vm.destroy.forcestop, D3) runs under DestroyVMCmd and stays evidence.
func (c *Checker) forcedByCaller(vm, actor, msg string) bool {
	if !strings.Contains(msg, "continue with release because it's a force stop") && !c.forcedCleanup[actor] {
		return false
	}
	for _, j := range c.apiJobs {
		if j.vm == vm && strings.Contains(j.cmd, "StopVMCmd") {
			return true
		}
	}
	return false
}

// job follows the API jobs: "Executing AsyncJob {…cmd…, instance VirtualMachine:N}" starts one,
// "Complete async job-N" ends it.
func (c *Checker) job(f *Fact) {
	id := strings.TrimPrefix(f.Object, "job:")
	m := f.Detail
	switch {
	case strings.HasPrefix(m, "Executing AsyncJob"):
		vm := ""
		if inst := jsonField(m, "instance"); strings.HasPrefix(inst, "VirtualMachine:") {
			vm = "vm:" + strings.TrimPrefix(inst, "VirtualMachine:")
		} else if jsonField(m, "instanceType") == "VirtualMachine" && jsonField(m, "instanceId") != "" {
			vm = "vm:" + jsonField(m, "instanceId")
		}
		if vm != "" && id != "" {
			c.apiJobs[id] = apiJob{cmd: jsonField(m, "cmd"), vm: vm}
		}
	case strings.HasPrefix(m, "Complete async job-"):
		delete(c.apiJobs, id)
	}
}

func (c *Checker) obj(k string) *objState {
	o := c.objs[k]
	if o == nil {
		o = &objState{}
		c.objs[k] = o
	}
	return o
}

func (c *Checker) remember(k string, r lref) {
	if k == "" {
		return
	}
	o := c.obj(k)
	if len(o.ring) < c.opt.Timeline {
		o.ring = append(o.ring, r)
		return
	}
	o.ring[o.next] = r
	o.next = (o.next + 1) % len(o.ring)
}

func (c *Checker) find(check, object string, t time.Time, msg string, evidence ...lref) {
	key := check + "|" + object
	if c.found[key] {
		return
	}
	c.found[key] = true
	var tl []Ref
	if o := c.objs[object]; o != nil {
		tl = refs(o.timeline())
	}
	c.Findings = append(c.Findings, Finding{Check: check, Invariant: check, Object: object, Time: t, Message: msg, Evidence: refs(evidence), Timeline: tl})
}

// Saw notes an entry's time, whatever it says: the end-of-log checks count from the last line.
func (c *Checker) Saw(e *Entry) {
	if !e.HasTime {
		return
	}
	c.guardLine(e)
	if c.first.IsZero() {
		c.first = e.Time
	}
	if e.Time.After(c.last) {
		c.last = e.Time
	}
}

// Add judges one entry's facts.
func (c *Checker) Add(e *Entry, facts []Fact) {
	c.Saw(e)
	r := lref{e}
	for i := range facts {
		f := &facts[i]
		c.counts[f.Kind]++
		if e.HasTime {
			c.timed[f.Kind]++
		}
		if f.Kind == KNoState || f.Kind == KStorage {
			continue // counted, and nothing more: no event, no timeline
		}
		if c.opt.Events != nil {
			c.evSeq++
			ev := f.Event
			ev.Seq = c.evSeq
			c.opt.Events(ev, e.Origin())
		}
		if e.HasTime {
			switch f.Event.Kind {
			case history.State, history.Power, history.Lock:
				c.guard(f.Event, r)
			}
		}
		switch {
		case f.Kind == KLock && f.Event.Kind == history.Lock:
			c.remember("network:"+strings.TrimPrefix(f.Object, "networks"), r)
		case f.Kind == KJob:
			// no check needs a job's timeline, and a log has as many jobs as it is long
		default:
			c.remember(f.Object, r)
		}
		c.fact(f, r)
	}
}

func (c *Checker) fact(f *Fact, r lref) {
	switch f.Kind {
	case KLock:
		if f.Event.Kind == history.Lock { // not an "Unable to acquire lock" line
			n := "network:" + strings.TrimPrefix(f.Object, "networks")
			if f.To == "held" {
				if h, ok := c.locks[n]; !ok || h.actor != f.Actor {
					c.locks[n] = lockHold{actor: f.Actor, ref: r}
				} else {
					return // re-entrant: the same thread logs its own acquisition twice
				}
			} else {
				if h, ok := c.locks[n]; ok && h.actor == f.Actor {
					delete(c.locks, n)
				} else {
					return
				}
			}
			c.lin(f.Event)
		}
	case KMSStart:
		// a restarted server's threads are gone with the locks they held in it
		for n, h := range c.locks {
			if serverOf(h.actor) == serverOf(f.Actor) {
				delete(c.locks, n)
			}
		}
		c.lin(history.Event{Kind: history.Fault, To: "ms-restart"})
	case KNetTransition:
		o := c.obj(f.Object)
		if f.Detail == orphanWrite && o.state == f.To {
			return // the cleanup's own transition line already said it (a log that has both)
		}
		if o.state == "" {
			// a log starts in the middle of a network's life (or its creation is not logged): its
			// first write chains from what that write says it was
			c.lin(history.Event{Kind: history.State, Object: f.Object, Actor: "(before the log)", To: f.From})
		}
		o.state, o.since, o.timed, o.ref = f.To, f.Time, r.e.HasTime, r
		h, held := c.locks[f.Object]
		ev := f.Event
		if held {
			ev.LockHolder = h.actor
		}
		if f.To == "Shutdown" {
			on := c.netVMs[f.Object]
			for _, vk := range slices.Sorted(mapKeys(on)) {
				v, alloc := c.obj(vk), on[vk]
				if v.state == "Running" {
					c.find(CheckNetworkDown, f.Object, f.Time,
						fmt.Sprintf("%s wrote %s %s -> Shutdown while %s, Running, holds an address in it (allocated at %s)", f.Actor, f.Object, f.From, vk, alloc.Origin()),
						lref{alloc}, v.ref, r)
				}
			}
		}
		if held && h.actor != f.Actor {
			how := "through the state machine"
			if f.Direct {
				how = "directly, around the state machine"
			}
			c.find(CheckNetworkLock, f.Object, f.Time,
				fmt.Sprintf("%s wrote %s %s -> %s %s while %s held its lock (taken at %s)", f.Actor, f.Object, f.From, f.To, how, h.actor, h.ref.e.Origin()),
				h.ref, r)
		}
		c.lin(ev)
	case KVMTransition:
		delete(c.forcedCleanup, f.Actor)
		o := c.obj(f.Object)
		o.state, o.since, o.timed, o.ref = f.To, f.Time, r.e.HasTime, r
		switch f.To {
		case "Starting", "Migrating":
			o.released, o.expunged = nil, nil
		case "Expunged":
			o.expunged = r.e
			// an expunged VM is kept (its domain may still be reported) but with a short timeline
			if n := len(o.ring); n > 4 {
				o.ring, o.next = o.timeline()[n-4:], 0
			}
		}
		if o.missing != nil && f.From == "Running" && f.To != "Running" {
			o.missing = nil
		}
	case KHostTransition, KVolTransition, KOtherState:
		o := c.obj(f.Object)
		o.state, o.since, o.timed, o.ref = f.To, f.Time, r.e.HasTime, r
	case KJob:
		c.job(f)
	case KRelease:
		if strings.Contains(f.Detail, forcedCleanupLine) {
			c.forcedCleanup[f.Actor] = true // until the thread's next VM transition ends the stop
			return
		}
		if f.Object != "" {
			o := c.obj(f.Object)
			if c.forcedByCaller(f.Object, f.Actor, f.Detail) {
				o.asserted, o.released, o.onAfter = r.e, nil, nil
			}
			if o.released == nil && o.asserted == nil {
				o.released = r.e // the first release since the VM last started is the evidence
			}
		}
	case KIP:
		if o := c.obj(f.Object); o.state == "" {
			o.state = "seen"
			if f.From != "free" { // the log starts while the address is held
				c.lin(history.Event{Kind: history.IP, Object: f.Object, Actor: "(before the log)", From: "free", To: f.From})
			}
		}
		if strings.HasPrefix(f.From, "vm:") && f.To == "free" {
			if o := c.obj(f.From); o.released == nil && o.asserted == nil {
				o.released = r.e
			}
			if on := c.netVMs[f.Network]; on != nil {
				delete(on, f.From)
			}
			c.remember(f.From, r)
		}
		if strings.HasPrefix(f.To, "vm:") && f.Network != "" {
			if c.netVMs[f.Network] == nil {
				c.netVMs[f.Network] = map[string]*Entry{}
			}
			c.netVMs[f.Network][f.To] = r.e
		}
		c.lin(f.Event)
	case KMissing:
		o := c.obj(f.Object)
		o.asserted = nil // the domain the forced stop asserted gone is gone
		if o.state == "Running" && o.missing == nil {
			o.missing = r.e
		}
		o.onAfter = nil // the domain was not there after all: that power-on report was stale
	case KPowerUpdate, KUnknownDomain:
		o := c.obj(f.Object)
		if f.To != "PowerOn" {
			o.asserted = nil // the domain the forced stop asserted gone is gone
			return
		}
		o.missing = nil
		if o.released != nil {
			what := "its resources were released"
			if o.expunged != nil {
				what = "it was expunged"
			}
			p := &pendingFinding{f.Time, fmt.Sprintf("%s: %s at %s, then a power report shows its domain on (%s)", f.Object, what, o.released.Origin(), r.e.Origin()),
				[]lref{{o.released}, r}}
			if o.onAfter == nil {
				o.onAfter = p // one report may be stale: judged at the next report or the end of the log
				return
			}
			c.find(CheckReleasedRunning, f.Object, o.onAfter.t, o.onAfter.msg, o.onAfter.evidence...)
			o.onAfter = nil
		}
	}
}

func serverOf(actor string) string {
	if i := strings.IndexByte(actor, '/'); i >= 0 {
		return actor[:i]
	}
	return ""
}

// linObject is the porcupine partition an event belongs to.
func linObject(e history.Event) string {
	if id, ok := strings.CutPrefix(e.Object, "networks"); ok {
		return "network:" + id
	}
	return e.Object
}

func (c *Checker) lin(e history.Event) {
	c.seq++
	e.Seq = c.seq
	e.Detail = ""                // the line's text would keep the whole line alive; the models need none of it
	if e.Kind == history.Fault { // a server restart ends every open lock section
		for k := range c.linear {
			if strings.HasPrefix(k, "network:") {
				c.linear[k] = append(c.linear[k], e)
			}
		}
		return
	}
	k := linObject(e)
	c.linear[k] = append(c.linear[k], e)
	if len(c.linear[k]) >= c.opt.LinearChunk {
		c.linFlush(k, false)
	}
}

// linFlush checks an object's gathered history if it is quiescent (or at the end), then restarts
// it from the state it reached: with no lock section open, every operation so far precedes every
// later one, so the object's history splits there.
func (c *Checker) linFlush(k string, end bool) {
	if _, held := c.locks[k]; held && !end {
		return
	}
	evs := c.linear[k]
	if len(evs) == 0 {
		return
	}
	for _, res := range linear.Check(linear.Partitions(evs), c.opt.LinearTimeout) {
		check := CheckLinearNetwork
		if res.Model == "ip" {
			check = CheckLinearIP
		}
		switch res.Verdict {
		case "illegal":
			var ev []lref
			if o := c.objs[res.Object]; o != nil {
				ev = o.timeline()
			}
			c.find(check, res.Object, c.last, "no sequential order explains this history: "+strings.Join(res.Explain, "; "), ev...)
		case "unknown":
			c.linNote = "a partition timed out (undecided): " + res.Object
		}
	}
	// restart from the last state written
	last := ""
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == history.State || evs[i].Kind == history.IP {
			last = evs[i].To
			break
		}
	}
	c.linear[k] = c.linear[k][:0]
	if last != "" && !end {
		c.seq++
		kind, from := history.State, ""
		if strings.HasPrefix(k, "ip:") {
			kind, from = history.IP, "free"
		}
		if from != last {
			c.linear[k] = append(c.linear[k], history.Event{Seq: c.seq, Kind: kind, Object: k, Actor: "(checked before)", From: from, To: last})
		}
	}
}

var transitional = map[string]map[string]bool{
	"vm":      {"Starting": true, "Stopping": true, "Migrating": true, "Expunging": true},
	"network": {"Implementing": true, "Shutdown": true},
}

// Finish runs the end-of-log checks and the porcupine models, and returns the coverage.
func (c *Checker) Finish() []Coverage {
	for _, k := range slices.Sorted(mapKeys(c.objs)) {
		o := c.objs[k]
		if o.onAfter != nil {
			c.find(CheckReleasedRunning, k, o.onAfter.t, o.onAfter.msg, o.onAfter.evidence...)
		}
		kind, _, _ := strings.Cut(k, ":")
		// a transition on a line without a time starts no clock: how long the object stayed is not
		// known (NOT DECIDABLE for it), never "since year one"
		if transitional[kind][o.state] && o.timed && c.last.Sub(o.since) > c.opt.Stuck {
			c.find(CheckStuck, k, o.since, fmt.Sprintf("%s entered %s at %s and is still there %s later, at the end of the log", k, o.state, o.ref.e.Origin(), c.last.Sub(o.since).Round(time.Second)), o.ref)
		}
		if o.missing != nil && o.missing.HasTime && c.last.Sub(o.missing.Time) > c.opt.Stuck && o.state == "Running" {
			c.find(CheckMissing, k, o.missing.Time, fmt.Sprintf("%s was reported missing at %s while Running and was neither stopped nor reported on again in the %s that followed", k, o.missing.Origin(), c.last.Sub(o.missing.Time).Round(time.Second)), lref{o.missing})
		}
	}
	for _, k := range slices.Sorted(mapKeys(c.linear)) {
		c.linFlush(k, true)
	}
	c.guardFindings()
	linNote := c.linNote
	var out []Coverage
	for _, ch := range Checks {
		cv := Coverage{Check: ch.Name, Doc: ch.Doc, Decidable: true}
		for _, need := range ch.Needs {
			ok, untimed := false, false
			for _, alt := range strings.Split(need, "|") {
				switch {
				case ch.NeedsTime && c.timed[alt] > 0, !ch.NeedsTime && c.counts[alt] > 0:
					ok = true
				case c.counts[alt] > 0:
					untimed = true // the lines are there, without the times the check needs
				}
			}
			switch {
			case ok:
			case untimed:
				cv.Decidable = false
				cv.Missing = append(cv.Missing, "timestamped "+need)
			default:
				cv.Decidable = false
				cv.Missing = append(cv.Missing, need)
			}
		}
		if (ch.Name == CheckLinearNetwork || ch.Name == CheckLinearIP) && linNote != "" {
			cv.Note = linNote
		}
		if ch.Name == CheckTransitionGuard {
			cv.Note = c.guardNote()
		}
		if ch.Name == CheckStuck || ch.Name == CheckMissing {
			cv.Note = fmt.Sprintf("objects judged only if the log runs on %s after they entered the state", c.opt.Stuck)
		}
		for _, f := range c.Findings {
			if f.Check == ch.Name {
				cv.Findings++
			}
		}
		out = append(out, cv)
	}
	slices.SortStableFunc(c.Findings, func(a, b Finding) int { return a.Time.Compare(b.Time) })
	return out
}

// Counts is how many facts of each kind the log carried.
func (c *Checker) Counts() map[string]int64 { return c.counts }

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// guardFindings turns the guards' violations into findings, their evidence the lines still known.
func (c *Checker) guardFindings() {
	for _, v := range c.guards.Violations {
		var ev []lref
		for _, e := range v.Evidence {
			if c.guardSeq-e.Seq < guardRingSize {
				if r := c.guardRing[e.Seq%guardRingSize]; r.e != nil {
					ev = append(ev, r)
				}
			}
		}
		c.find(CheckTransitionGuard, v.Event.Object, v.Event.Time, fmt.Sprintf("%s: %s by %s was not allowed: %s", v.Guard, v.Row, v.Event.Actor, v.Reason), ev...)
	}
}

// guardNote says which guards the log could not decide, and why.
func (c *Checker) guardNote() string {
	var parts []string
	for _, g := range slices.Sorted(mapKeys(c.guards.Undecided)) {
		parts = append(parts, fmt.Sprintf("%s NOT DECIDABLE for %d transition(s): %s", g, c.guards.Undecided[g], c.guards.Reasons[g]))
	}
	return strings.Join(parts, "; ")
}
