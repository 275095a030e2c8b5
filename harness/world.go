package harness

import (
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/invariant"
)

// substrate is what an in-process Cluster runs on: the deterministic simulator (simWorld), the
// reference in real time with simulated hosts (liveWorld) or real domains (libvirtWorld). The
// cluster's World (clusterRun), its client operations, faults and checker only ever go through it,
// so they do not know which of the three they run on.
type substrate interface {
	now() time.Time
	goTask(name string, fn func())
	sleep(d time.Duration)
	// pause is how a task polling the history waits before it looks again: d in the simulator;
	// in real time until the next event is recorded, d at most.
	pause(d time.Duration)
	// runUntil runs the world until done() or limit; runFor for d.
	runUntil(limit time.Time, done func() bool) error
	runFor(d time.Duration) error
	// settle runs the world after a scenario's last step: for d (the scenario's settle) in the
	// simulator; a real world may end sooner once nothing can change what the checker sees.
	settle(d time.Duration) error
	// offset is where a scenario falls against the server's fixed-rate tasks.
	offset() time.Duration
	steps() uint64
	close()

	// newServer listens for agents and returns a management server incarnation (not started);
	// stopServer ends it: its threads die, its listener closes, the database stays.
	newServer() *impl.Server
	stopServer()
	// newAgent returns a host's agent (not started); agentStopped ends what is left of a stopped
	// one (its tasks, its lifecycle subscription). Domains keep running.
	newAgent(h string) *impl.Agent
	agentStopped(h string)
	// killAgent is kill -9 of a host's agent a: its process dies, its socket closes (agentStopped
	// follows). A real world ends the process first, as the kernel does, so that nothing its goroutines
	// do when the socket closes (a log line, a message) happens after the kill.
	killAgent(h string, a *impl.Agent)
	cutLink(h string, on bool)
	delayNextOutOfBand(h string, d time.Duration)
	// running lists a host's powered-on domains; crash and guestShutdown act on one.
	running(h string) []string
	crash(h, dom, detail string) error
	guestShutdown(h, dom string) error
	// domains is the truth for the invariants: every host's domains, their IPs and open disks.
	domains() []invariant.Domain
	// confirm filters a check's violations: a world whose snapshot is not atomic reports a
	// violation of the domains' truth only once two checks in a row see it.
	confirm(vs []invariant.Violation) []invariant.Violation
	// setup says whether the scenario's setup (priming) is running.
	setup(on bool)
	// capabilities is what the world can do (capabilities.go).
	capabilities() Capabilities
	// clientEnv is the clients' own Env (the run's, not a server incarnation's): a client waiting for
	// its job outlives a server that dies under it.
	clientEnv() impl.Env
}

// simWorld is the simulator: one scheduler, virtual time, a fabric of links, simulated hosts.
type simWorld struct {
	c      *Cluster
	sched  *sim.Scheduler
	fabric *sim.Fabric
	hosts  map[string]*sim.Host
	ms     *incarnation // the running management server's process
}

// sim is the cluster's simulator, nil in a real world.
func (c *Cluster) sim() *simWorld {
	w, _ := c.w.(*simWorld)
	return w
}

// Scheduler is the simulator's scheduler (nil in a real world): a benchmark drives it directly.
func (c *Cluster) Scheduler() *sim.Scheduler {
	if w := c.sim(); w != nil {
		return w.sched
	}
	return nil
}

// incarnation is one management-server process's Env. Once it is stopped, a thread it would start is
// never born: a process that died starts nothing. Under the random strategy no server code runs
// between the kill and the next incarnation; under PCT a client preempted in the middle of an API
// call (between allocating a VM and submitting its job) resumes after the kill, and without this its
// job's executor would be a thread of a dead server, retrying a start whose work job no heartbeat
// will ever dispatch.
type incarnation struct {
	*sim.Scheduler
	dead bool
}

func (e *incarnation) Go(name string, fn func()) {
	if !e.dead {
		e.Scheduler.Go(name, fn)
	}
}

func (w *simWorld) now() time.Time                { return w.sched.Now() }
func (w *simWorld) goTask(name string, fn func()) { w.sched.Go(name, fn) }
func (w *simWorld) sleep(d time.Duration)         { w.sched.Sleep(d) }
func (w *simWorld) pause(d time.Duration)         { w.sched.Sleep(d) }
func (w *simWorld) runUntil(limit time.Time, done func() bool) error {
	return w.sched.RunUntil(limit, done)
}
func (w *simWorld) runFor(d time.Duration) error { return w.sched.RunFor(d) }
func (w *simWorld) settle(d time.Duration) error { return w.sched.RunFor(d) }
func (w *simWorld) offset() time.Duration {
	return time.Duration(w.sched.Rand().Int64N(int64(10 * time.Second)))
}
func (w *simWorld) steps() uint64 { return w.sched.Steps() }
func (w *simWorld) close()        { w.sched.Close() }

func (w *simWorld) newServer() *impl.Server {
	c := w.c
	w.fabric.Listen(true)
	w.ms = &incarnation{Scheduler: w.sched}
	return impl.NewServer("ms1", w.ms, c.DB, c.Config, c.Defects, w.fabric)
}

func (w *simWorld) stopServer() {
	w.fabric.Listen(false)
	w.ms.dead = true
	w.sched.Kill("ms/")
}

func (w *simWorld) newAgent(h string) *impl.Agent {
	c := w.c
	a := impl.NewAgent(h, w.sched, w.fabric, w.hosts[h], c.Rec)
	v := w.haView()
	a.HA, a.Guests = v, v
	a.Defects = c.Defects
	return a
}

// killAgent: the simulator runs no task between the socket's close and agentStopped's kill of the
// agent's tasks.
func (w *simWorld) killAgent(h string, a *impl.Agent) { a.Kill() }

func (w *simWorld) agentStopped(h string) {
	w.hosts[h].Unsubscribe()
	w.sched.Kill("agent/" + h + "/")
}

func (w *simWorld) cutLink(h string, on bool)                    { w.fabric.Cut(h, on) }
func (w *simWorld) delayNextOutOfBand(h string, d time.Duration) { w.fabric.DelayNextOutOfBand(h, d) }
func (w *simWorld) failStarts(h string, on bool)                 { w.hosts[h].FailStarts(on) }
func (w *simWorld) running(h string) []string                    { return w.hosts[h].Running() }
func (w *simWorld) crash(h, dom, detail string) error            { return w.hosts[h].Crash(dom, detail) }
func (w *simWorld) guestShutdown(h, dom string) error            { return w.hosts[h].GuestShutdown(dom) }

func (w *simWorld) domains() []invariant.Domain {
	var out []invariant.Domain
	for _, h := range w.c.HostIDs {
		for _, d := range w.hosts[h].Domains() {
			out = append(out, invariant.Domain{HostID: h, Name: d.Name, Running: d.Running, IPs: d.IPs, Disks: d.Disks})
		}
	}
	return out
}

// The simulator's snapshot is atomic: every violation stands.
func (w *simWorld) confirm(vs []invariant.Violation) []invariant.Violation { return vs }
func (w *simWorld) setup(bool)                                             {}
func (w *simWorld) capabilities() Capabilities                             { return SimCapabilities }
func (w *simWorld) clientEnv() impl.Env                                    { return w.sched }

var _ substrate = (*simWorld)(nil)
