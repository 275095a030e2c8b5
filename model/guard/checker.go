package guard

import (
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
)

// Checker judges a history's state changes against the guards, event by event, in the history's
// order. It keeps what the guards read: each VM's state and power state and who moved it, each
// network's users, lock holder and age, each host's last report, the jobs in progress.
type Checker struct {
	cfg    Config
	guards []Guard

	vms   map[string]*vmCtx
	nets  map[string]*netCtx
	hosts map[string]*hostCtx
	jobs  map[string]*jobCtx
	// starting is, by thread, the user VM that thread is starting (its networks are the ones the
	// thread implements or finds implemented meanwhile)
	starting map[string]string
	// implementing is, by thread, the network it moved to Implementing last (a router it creates then
	// is that network's)
	implementing map[string]string
	// reportLine is, by thread, its last line saying it processes a host's report: where a report
	// handler's checks (pending work, power state) begin
	reportLine map[string]history.Event
	// pingLine is, by thread, its last out-of-band ping line (it says when the report was collected);
	// collected is, by thread, when the report it handles now was collected (zero: not said)
	pingLine  map[string]history.Event
	collected map[string]time.Time
	// locksSeen: the history records the network lock table (lock lines), so a write with no holder
	// was made without the lock
	locksSeen bool

	// Violations are the transitions the guards did not allow, in the history's order.
	Violations []Violation
	// Judged, Undecided count, by guard, the transitions it allowed or refused, and those it could
	// not decide; Reasons keeps the first reason of each undecided guard.
	Judged, Undecided map[string]int
	Reasons           map[string]string
}

type vmCtx struct {
	created bool // the history shows the record's creation (its power state is then known)
	router  bool
	state   string
	stateEv history.Event
	// owner is the thread whose own request (StartRequested, StopRequested, MigrationRequested,
	// OperationRetry) put the VM in its current transitional state
	owner   string
	power   string
	powerEv history.Event
	powers  []history.Event // every power-state change, in order
	// detected is the power handler's "Detected missing VM" line of its last missing report, and
	// lastUpdate the power-state update time that line gives (zero if it gave none readable)
	detected   history.Event
	lastUpdate time.Time
	nets       []string
	// recent are the last state changes, recent[n%stateRing] the newest
	recent [stateRing]history.Event
	n      int
}

type netCtx struct {
	state        string
	stateEv      history.Event
	implementing history.Event // the transition to Implementing, while Implementing
	router       string
	shutdownBy   string   // the thread that moved it to Shutdown last (shutdownNetwork's)
	shutdownSeq  int64    // the line of that move
	users        []string // user VMs with a NIC in it
	// busySince is when the network last went from no active user VM to one (zero while free);
	// freeImplemented the first moment, since it last became Implemented, it was free
	busySince       time.Time
	busySeq         int64 // the line that made it busy
	freeImplemented time.Time
	// gcSighted is, by GC thread (each server's GC keeps its own _lastNetworkIdsToFree), the last
	// "free for the first time" line for it and whether no user VM on it was active then
	gcSighted map[string]gcSighting
	holder    string
	lockEv    history.Event
}

type gcSighting struct {
	at   time.Time
	free bool
}

type hostCtx struct {
	lastReport  history.Event // the last VM state report processed for it (a ping's)
	pingTimeout history.Event // the last "ping timeout" decision for it
	quietFrom   history.Event // the last report before that decision
	upSeq       int64         // the line of its last transition to Up
}

type jobCtx struct {
	created  history.Event
	cmd      string
	instance string // vm:N or network:N
	status   string
}

// NewChecker returns a checker of an empty history under cfg with the default guards.
func NewChecker(cfg Config) *Checker { return NewCheckerWith(cfg, Guards) }

// NewCheckerWith returns a checker with the given guards (tests plant bugs against one guard).
func NewCheckerWith(cfg Config, guards []Guard) *Checker {
	return &Checker{cfg: cfg, guards: guards,
		vms: map[string]*vmCtx{}, nets: map[string]*netCtx{}, hosts: map[string]*hostCtx{}, jobs: map[string]*jobCtx{},
		starting: map[string]string{}, implementing: map[string]string{}, reportLine: map[string]history.Event{},
		pingLine: map[string]history.Event{}, collected: map[string]time.Time{},
		Judged: map[string]int{}, Undecided: map[string]int{}, Reasons: map[string]string{}}
}

// SetConfig changes the settings the guards read from the next event on.
func (c *Checker) SetConfig(cfg Config) { c.cfg = cfg }

// Check judges a whole history.
func Check(cfg Config, events []history.Event) []Violation {
	c := NewChecker(cfg)
	for i := range events {
		c.Add(events[i])
	}
	return c.Violations
}

func (c *Checker) vm(o string) *vmCtx {
	v := c.vms[o]
	if v == nil {
		v = &vmCtx{}
		c.vms[o] = v
	}
	return v
}

func (c *Checker) net(o string) *netCtx {
	n := c.nets[o]
	if n == nil {
		n = &netCtx{}
		c.nets[o] = n
	}
	return n
}

func (c *Checker) host(o string) *hostCtx {
	h := c.hosts[o]
	if h == nil {
		h = &hostCtx{}
		c.hosts[o] = h
	}
	return h
}

// Add reads the next event of the history.
func (c *Checker) Add(e history.Event) {
	switch e.Kind {
	case history.State:
		kind, _, _ := strings.Cut(e.Object, ":")
		if r, ok := rowOf(kind, &e); ok {
			c.judge(&e, r)
		}
		c.applyState(kind, &e)
	case history.Power:
		if e.From != "" {
			c.judge(&e, Row{Power, e.From, "report", e.To})
		}
		v := c.vm(e.Object)
		v.power, v.powerEv = e.To, e
		v.powers = append(v.powers, e)
	case history.Lock:
		c.locksSeen = true
		n := "network:" + strings.TrimPrefix(e.Object, "networks")
		c.touchNetwork(e.Actor, n)
		nc := c.net(n)
		switch e.To {
		case "held":
			nc.holder, nc.lockEv = e.Actor, e
		case "released":
			if nc.holder == e.Actor {
				nc.holder = ""
			}
		}
	case history.Log:
		if strings.HasPrefix(e.Object, "network:") {
			c.touchNetwork(e.Actor, e.Object)
		}
		c.applyLog(&e)
	case history.Fault:
		if e.Object == "ms:ms1" || strings.HasPrefix(e.To, "ms-restart") {
			// a restarted server's threads are gone with the locks they held
			for _, n := range c.nets {
				n.holder = ""
			}
		}
	}
}

// reportLine is a VM state report of a host being processed: one per ping that carries one.
func reportLine(d string) bool {
	return strings.HasPrefix(d, "Process VM state report") || strings.HasPrefix(d, "Process host VM state report")
}

func (c *Checker) applyLog(e *history.Event) {
	switch {
	case strings.HasPrefix(e.Object, "host:") && reportLine(e.Detail):
		c.host(e.Object).lastReport = *e
		delete(c.collected, e.Actor)
		if p, ok := c.pingLine[e.Actor]; ok && p.Seq > c.reportLine[e.Actor].Seq {
			if t, ok := collectedAt(p); ok {
				c.collected[e.Actor] = t
			}
		}
		c.reportLine[e.Actor] = *e
	case strings.HasPrefix(e.Object, "network:") && Classify(e.Actor) == ActorNetworkGC &&
		strings.Contains(e.Detail, "to be free for the first time"):
		n := c.net(e.Object)
		if n.gcSighted == nil {
			n.gcSighted = map[string]gcSighting{}
		}
		n.gcSighted[e.Actor] = gcSighting{e.Time, n.busySince.IsZero()}
	case strings.HasPrefix(e.Object, "vm:") && strings.HasPrefix(e.Detail, "Detected missing VM"):
		v := c.vm(e.Object)
		v.detected = *e
		v.lastUpdate = lastStateUpdate(e.Detail, e.Time)
	case strings.HasPrefix(e.Object, "vm:") && (strings.HasPrefix(e.Detail, "Schedule vm for HA: ") || strings.HasPrefix(e.Detail, "Scheduled HAWork[")):
		// a VM handed to HA: judged as a row of the HA machine, from the VM's state now; the job GC's
		// thread runs TransitionTask (the only hand-over it makes)
		if c.vm(e.Object).state != "" && Classify(e.Actor) == ActorJobGC {
			c.judge(e, Row{HA, c.vm(e.Object).state, "TransitionTask", haWorkType(e.Detail)})
		}
	case strings.HasPrefix(e.Detail, "Ping from Routing host") && strings.Contains(e.Detail, "collected "):
		c.pingLine[e.Actor] = *e
	case strings.HasPrefix(e.Detail, "Ping timeout for agent"):
		h := e.Object
		if h == "" {
			if f := strings.Fields(e.Detail); len(f) > 4 {
				h = "host:" + strings.TrimSuffix(f[4], ",")
			}
		}
		if h != "" {
			hc := c.host(h)
			hc.pingTimeout, hc.quietFrom = *e, hc.lastReport
		}
	}
}

// haWorkType reads the work's type from an HA line's HAWork[id-Type-vm-state-step].
func haWorkType(d string) string {
	i := strings.Index(d, "HAWork[")
	if i < 0 {
		return ""
	}
	f := strings.SplitN(d[i+len("HAWork["):], "-", 3)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// lastStateUpdate reads the power-state update time of a "Detected missing VM ... last state update:
// T" line written at at: a date and time (CloudStack's DateUtil.getOutputString, seconds), or a time
// of day (the reference's, milliseconds), taken on at's day or the day before. A time truncated to
// the second is earlier than the true one, so a period measured from it is never too short. Zero: the
// line gives no time this can read.
func lastStateUpdate(d string, at time.Time) time.Time {
	_, v, ok := strings.Cut(d, "last state update: ")
	if !ok {
		return time.Time{}
	}
	v = strings.TrimSpace(v)
	for _, layout := range []string{"2006-01-02T15:04:05-0700", time.RFC3339Nano, "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t
		}
	}
	for _, layout := range []string{"15:04:05.000", "15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			y, m, dd := at.Date()
			day := time.Date(y, m, dd, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), at.Location())
			if day.After(at) {
				day = day.AddDate(0, 0, -1)
			}
			return day
		}
	}
	return time.Time{}
}

// reportForced says whether the report thread actor is processing was forced, and whether the
// history says: the report's line gives the ping's outOfBand flag ("force: true"); a StartupCommand's
// report (the connect thread's) is never forced (processHostVmStateReport passes false).
func (c *Checker) reportForced(actor string) (forced, known bool) {
	if strings.Contains(actor, "AgentConnectTaskPool") {
		return false, true
	}
	r, ok := c.reportLine[actor]
	if !ok {
		return false, false
	}
	switch {
	case strings.Contains(r.Detail, "force: true"):
		return true, true
	case strings.Contains(r.Detail, "force: false"):
		return false, true
	}
	return false, false
}

// touchNetwork: a thread starting a user VM that implements a network, finds it implemented or takes
// its lock is preparing that VM's NIC in it.
func (c *Checker) touchNetwork(actor, n string) {
	v, ok := c.starting[actor]
	if !ok {
		return
	}
	vc := c.vm(v)
	if slices.Contains(vc.nets, n) {
		return
	}
	vc.nets = append(vc.nets, n)
	nc := c.net(n)
	nc.users = append(nc.users, v)
	c.recount(n, vc.stateEv)
}

// active says whether the network GC counts a user VM in this state as using its network
// (isNetworkReadyForGc: anything but Stopped, Destroyed, Error, Expunging — and a removed record).
func active(state string) bool {
	switch state {
	case "", "Stopped", "Destroyed", "Error", "Expunging", "Expunged":
		return false
	}
	return true
}

// recount updates a network's busy and free marks after a change of its users at e.
func (c *Checker) recount(n string, e history.Event) {
	t := e.Time
	nc := c.net(n)
	busy := false
	for _, u := range nc.users {
		busy = busy || active(c.vm(u).state)
	}
	switch {
	case busy && nc.busySince.IsZero():
		nc.busySince, nc.busySeq = t, e.Seq
	case !busy:
		nc.busySince = time.Time{}
		if (nc.state == "Implementing" || nc.state == "Implemented") && nc.freeImplemented.IsZero() {
			nc.freeImplemented = t
		}
	}
}

func (c *Checker) applyState(kind string, e *history.Event) {
	switch kind {
	case "vm":
		v := c.vm(e.Object)
		if e.From == "" {
			v.created = true
			v.power = "PowerOff"
			v.router = strings.HasPrefix(strings.TrimPrefix(e.Detail, "created "), "r-")
			if v.router {
				if n, ok := c.implementing[e.Actor]; ok {
					c.net(n).router = e.Object
				}
			}
		}
		if f := strings.Fields(e.Detail); len(f) > 0 && strings.HasPrefix(f[0], "r-") {
			v.router = true // a router's instance name, on a log's line too
		}
		ev := vmEvent(e)
		switch ev {
		case "StartRequested", "StopRequested", "MigrationRequested", "OperationRetry", "StorageMigrationRequested":
			v.owner = e.Actor
		default:
			if !active(e.To) || e.To == "Running" {
				v.owner = ""
			}
		}
		v.state, v.stateEv = e.To, *e
		v.n++
		v.recent[v.n%stateRing] = *e
		if !v.router {
			if ev == "StartRequested" {
				c.starting[e.Actor] = e.Object
			} else if e.To != "Starting" && c.starting[e.Actor] == e.Object {
				delete(c.starting, e.Actor)
			}
			for _, n := range v.nets {
				c.recount(n, *e)
			}
		}
	case "network":
		n := c.net(e.Object)
		if e.To == "Implementing" {
			n.implementing = *e
			n.freeImplemented = time.Time{}
			c.implementing[e.Actor] = e.Object
		} else if e.To != "Implemented" {
			n.freeImplemented = time.Time{}
		}
		if e.To == "Shutdown" && e.From != "Shutdown" {
			n.shutdownBy, n.shutdownSeq = e.Actor, e.Seq
		}
		n.state, n.stateEv = e.To, *e
		c.touchNetwork(e.Actor, e.Object)
		c.recount(e.Object, *e)
	case "host":
		if e.To == "Up" && e.From != "Up" { // Up -Ping-> Up leaves the status as it was
			c.host(e.Object).upSeq = e.Seq
		}
	case "job":
		j := c.jobs[e.Object]
		if j == nil {
			j = &jobCtx{created: *e}
			c.jobs[e.Object] = j
			f := strings.Fields(e.Detail)
			if len(f) > 0 {
				j.cmd = f[0]
			}
			if len(f) > 1 {
				typ, id, _ := strings.Cut(f[len(f)-1], ":")
				switch typ {
				case "VirtualMachine":
					j.instance = "vm:" + id
				case "Network":
					j.instance = "network:" + id
				}
			}
		}
		j.status = e.To
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format("15:04:05.000")
}

// pendingWork is a VM work job (VmWork*, placeholders included) in progress on the VM, created
// before line before (0: any).
func (c *Checker) pendingWork(vm string, before int64) (history.Event, bool) {
	var found history.Event
	for _, j := range c.jobs {
		if j.status == "IN_PROGRESS" && j.instance == vm && strings.HasPrefix(j.cmd, "VmWork") && (before == 0 || j.created.Seq < before) {
			if found.Seq == 0 || j.created.Seq < found.Seq {
				found = j.created // the oldest: a deterministic answer
			}
		}
	}
	return found, found.Seq != 0
}

// stopsInProgress counts the VM's stop work jobs in progress (VmWorkStop, placeholders included).
func (c *Checker) stopsInProgress(vm string) int {
	n := 0
	for _, j := range c.jobs {
		if j.status == "IN_PROGRESS" && j.instance == vm && strings.HasPrefix(j.cmd, "VmWorkStop") {
			n++
		}
	}
	return n
}

// pendingNetworkJob is a job in progress on the network.
func (c *Checker) pendingNetworkJob(n string) (history.Event, bool) {
	for _, j := range c.jobs {
		if j.status == "IN_PROGRESS" && j.instance == n {
			return j.created, true
		}
	}
	return history.Event{}, false
}

// vmEvent is the VM event a state line carries ("i-2-10-VM OperationSucceeded host=h1").
func vmEvent(e *history.Event) string {
	f := strings.Fields(e.Detail)
	if len(f) >= 2 {
		return f[1]
	}
	if len(f) == 1 && e.From != "" {
		return f[0] // a log's transition line carries the event alone
	}
	return ""
}

// rowOf is the row a state line follows; false for a creation or a line that names no event.
func rowOf(kind string, e *history.Event) (Row, bool) {
	if e.From == "" {
		return Row{}, false
	}
	switch kind {
	case "vm":
		ev := vmEvent(e)
		if ev == "" || ev == "removed" || e.To == "Expunged" {
			return Row{}, false // the record's removal, no transition of the machine
		}
		return Row{VMs, e.From, ev, e.To}, true
	case "network":
		ev := e.Detail
		if i := strings.LastIndex(ev, ": "); i >= 0 {
			ev = ev[i+2:]
		}
		if strings.HasPrefix(ev, "setState(") {
			return Row{Networks, e.From, "setState", e.To}, true
		}
		return Row{Networks, e.From, ev, e.To}, true
	case "host":
		return Row{Hosts, e.From, e.Detail, e.To}, true
	case "job":
		return Row{Jobs, e.From, e.To, e.To}, true
	}
	return Row{}, false
}

func (c *Checker) judge(e *history.Event, r Row) {
	actor := Classify(e.Actor)
	for i := range c.guards {
		g := &c.guards[i]
		if !g.Applies(r, actor) {
			continue
		}
		o := g.Check(c, e, r)
		switch o.Verdict {
		case Inapplicable:
		case Undecidable:
			c.Undecided[g.Name]++
			if _, ok := c.Reasons[g.Name]; !ok {
				c.Reasons[g.Name] = o.Reason
			}
		case Violated:
			c.Judged[g.Name]++
			c.Violations = append(c.Violations, Violation{Guard: g.Name, Row: r, Event: *e, Reason: o.Reason, Evidence: append(o.Evidence, *e)})
		default:
			c.Judged[g.Name]++
		}
	}
}

// powerSince lists the power states a VM had at some moment from line since on (its state then and
// every later one); the state before any power line is PowerOff for a VM whose creation was seen.
func (v *vmCtx) powerSince(since int64) []string {
	var out []string
	before := ""
	if v.created {
		before = "PowerOff"
	}
	for _, p := range v.powers {
		if p.Seq < since {
			before = p.To
			continue
		}
		out = append(out, p.To)
	}
	if before != "" {
		out = append(out, before)
	}
	return out
}

// collectedAt reads when an out-of-band ping's report was collected ("collected 00:00:46.099"), on the
// ping line's day (the day before, if that would put it after the line).
func collectedAt(e history.Event) (time.Time, bool) {
	i := strings.Index(e.Detail, "collected ")
	if i < 0 {
		return time.Time{}, false
	}
	f := strings.Fields(e.Detail[i+len("collected "):])
	if len(f) == 0 {
		return time.Time{}, false
	}
	tod, err := time.Parse("15:04:05.000", strings.TrimSuffix(f[0], ")"))
	if err != nil {
		return time.Time{}, false
	}
	y, m, d := e.Time.Date()
	t := time.Date(y, m, d, tod.Hour(), tod.Minute(), tod.Second(), tod.Nanosecond(), e.Time.Location())
	if t.After(e.Time.Add(time.Hour)) {
		t = t.AddDate(0, 0, -1)
	}
	return t, true
}

// stateRing is how many of a VM's last state changes the checker keeps for stateBefore.
const stateRing = 8

// stateBefore is the VM's last state change before line seq; false if the history shows none, or it
// is older than the changes kept.
func (v *vmCtx) stateBefore(seq int64) (history.Event, bool) {
	for i := 0; i < stateRing && i < v.n; i++ {
		e := v.recent[(v.n-i)%stateRing]
		if e.Seq < seq {
			return e, true
		}
	}
	return history.Event{}, false
}

// readAt is where a report handler on thread actor read the rows it acts on: its report's line (the
// transition's own line when the thread logged none).
func (c *Checker) readAt(actor string, e *history.Event) int64 {
	if r, ok := c.reportLine[actor]; ok {
		return r.Seq
	}
	return e.Seq
}
