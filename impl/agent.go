package impl

import (
	"fmt"
	"slices"
	"time"

	"github.com/csconform/csconform/model/history"
)

// Agent is the KVM agent of one host (spec 3.13): it connects, pings every ping.interval with a report
// of the powered-on domains only, sends an out-of-band ping when another domain shuts itself down or
// crashes (the report collected at that moment), and runs Start/Stop/Delete commands.
type Agent struct {
	HostID string
	Env    Env
	Net    Transport
	HV     Hypervisor
	Sink   history.Sink // agent.log lines
	// HA is the shared primary storage's HA view (heartbeats, disk activity); nil: no NFS pool.
	HA HAStorage
	// Guests is what a router on this host reaches when it pings a guest address; nil: nothing answers.
	Guests GuestNetwork
	// Defects are the switches of the profile the agent plays (C6 is the agent's); nil: none on.
	Defects Switches

	// mu guards the fields below; it is never held across a call into Env, a Pipe or the Hypervisor.
	mu           coopMutex
	pipe         Pipe
	seq          int64
	pingInterval time.Duration
	dead         bool
	startupAck   Signal
	generation   int
	// starting holds, per VM name, the StartCommand still creating its domain (C6's fix).
	starting map[string]Signal
}

// Reconnect back-off after a link drop (issue #8517).
const agentReconnectDelay = 5 * time.Second

// NewAgent returns an agent; Start runs it. Its tasks are named "agent/<host>/…".
func NewAgent(hostID string, env Env, net Transport, hv Hypervisor, sink history.Sink) *Agent {
	return &Agent{HostID: hostID, Env: env, Net: net, HV: hv, Sink: sink, mu: coopMutex{env: env, name: "agent " + hostID + "'s lock"}}
}

func (a *Agent) log(level, format string, args ...any) {
	if a.Sink != nil {
		a.Sink.Emit(history.Event{Time: a.Env.Now(), Actor: "agent/" + a.HostID, Kind: history.Log, Level: level,
			Object: HostObject(a.HostID), Detail: fmt.Sprintf(format, args...)})
	}
}

func (a *Agent) task(name string, fn func()) { a.Env.Go("agent/"+a.HostID+"/"+name, fn) }

// Start subscribes to lifecycle events and connects.
func (a *Agent) Start() {
	a.HV.Subscribe(a.onLifecycleChange)
	a.task("connect", a.connectLoop)
}

// Shutdown is a graceful agent stop (systemctl stop cloudstack-agent), as Agent.stop does it: no more
// reconnects, a ShutdownCommand, one second for it to reach the server, then the socket closes. The
// domains keep running.
func (a *Agent) Shutdown() {
	a.mu.Lock()
	if a.dead {
		a.mu.Unlock()
		return
	}
	a.dead = true // reconnectAllowed = false
	p := a.pipe
	if p != nil {
		a.seq++
	}
	seq := a.seq
	a.mu.Unlock()
	if p != nil {
		a.log("INFO", "Stopping the agent: Reason = sig.kill")
		_ = p.Send(Message{Seq: seq, Kind: MsgShutdown, HostID: a.HostID})
		a.Env.Sleep(time.Second)
	}
	a.Kill()
}

// Kill is the agent process dying (kill -9): its socket closes, its domains keep running.
func (a *Agent) Kill() {
	a.mu.Lock()
	a.dead = true
	p := a.pipe
	a.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// Dead says whether the agent was shut down or killed.
func (a *Agent) Dead() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dead
}

// alive says whether the agent runs and gen is still its connection.
func (a *Agent) alive(gen int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.dead && a.generation == gen
}

func (a *Agent) nextSeq() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	return a.seq
}

func (a *Agent) connectLoop() {
	for !a.Dead() {
		p, err := a.Net.Dial(a.HostID)
		if err != nil {
			a.log("WARN", "Unable to connect to management server: %v", err)
			a.Env.Sleep(agentReconnectDelay)
			continue
		}
		ack := a.Env.NewSignal()
		a.mu.Lock()
		if a.dead { // killed while dialling (only possible with real concurrency)
			a.mu.Unlock()
			p.Close()
			return
		}
		a.pipe = p
		a.generation++
		gen := a.generation
		a.startupAck = ack
		a.mu.Unlock()
		a.task("reader", func() { a.reader(p, gen) })
		a.sendStartup(p)
		if !ack.Wait(a.pingOrDefault()) || a.Dead() {
			p.Close()
			a.Env.Sleep(agentReconnectDelay)
			continue
		}
		a.pingLoop(p, gen)
		if a.Dead() {
			return
		}
		a.log("INFO", "Lost connection to management server, reconnecting in %s", agentReconnectDelay)
		a.Env.Sleep(agentReconnectDelay)
	}
}

func (a *Agent) pingOrDefault() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pingInterval > 0 {
		return a.pingInterval
	}
	return 60 * time.Second
}

func (a *Agent) sendStartup(p Pipe) {
	seq := a.nextSeq()
	a.log("INFO", "Sending Startup command with %d running domains", len(a.HV.Running()))
	_ = p.Send(Message{Seq: seq, Kind: MsgStartup, HostID: a.HostID, HasReport: true, Report: a.HV.Running(), CollectedAt: a.Env.Now()})
}

// pingLoop returns when the connection is gone.
func (a *Agent) pingLoop(p Pipe, gen int) {
	for a.alive(gen) {
		a.Env.Sleep(a.pingOrDefault())
		if !a.alive(gen) {
			return
		}
		seq := a.nextSeq()
		if err := p.Send(Message{Seq: seq, Kind: MsgPing, HostID: a.HostID, HasReport: true, Report: a.HV.Running(), CollectedAt: a.Env.Now()}); err != nil {
			return
		}
	}
}

// reader handles the management server's requests and answers.
func (a *Agent) reader(p Pipe, gen int) {
	for {
		m, err := p.Recv()
		if err != nil {
			a.mu.Lock()
			if a.generation == gen {
				a.generation++ // ends the ping loop
			}
			a.mu.Unlock()
			return
		}
		if m.Kind == MsgAnswer {
			if m.PingInterval > 0 {
				a.mu.Lock()
				a.pingInterval = m.PingInterval
				ack := a.startupAck
				a.mu.Unlock()
				ack.Fire()
			}
			if m.SendStartup {
				a.log("INFO", "Management server requested startup command to reinitialize the agent")
				a.sendStartup(p)
			}
			continue
		}
		req := m
		if mutated(MutAgentOrderInTask) {
			a.task("cmd", func() { created, after := a.order(req); a.execute(p, req, created, after) })
			continue
		}
		created, after := a.order(req)
		a.task("cmd", func() { a.execute(p, req, created, after) })
	}
}

// order is C6's fix, taken in arrival order by the reader (the pool runs the commands in any order):
// a StopCommand that arrives while a StartCommand of the same VM is still preparing and creating its
// domain waits until the domain exists or the start failed, so that its checkBeforeCleanup sees a
// domain the start is about to run. 4.22's agent (Agent.processRequest on the AgentRequest-Handler
// pool; LibvirtStartCommandWrapper and LibvirtStopCommandWrapper take no per-VM lock) runs the stop
// beside the start: it finds no domain, answers stopped, and the start then boots a domain whose
// record the server has just released. created is the start's signal, after the stop's wait.
func (a *Agent) order(m Message) (created, after Signal) {
	if a.Defects[C6] {
		return nil, nil
	}
	switch {
	case m.Kind == MsgStart && m.Domain != nil:
		created = a.Env.NewSignal()
		a.mu.Lock()
		if a.starting == nil {
			a.starting = map[string]Signal{}
		}
		a.starting[m.Domain.Name] = created
		a.mu.Unlock()
	case m.Kind == MsgStop:
		a.mu.Lock()
		after = a.starting[m.VMName]
		a.mu.Unlock()
	}
	return created, after
}

// domainCreated ends a start's part of the order: its domain exists, or it never will.
func (a *Agent) domainCreated(name string, created Signal) {
	if created == nil {
		return
	}
	a.mu.Lock()
	if a.starting[name] == created {
		delete(a.starting, name)
	}
	a.mu.Unlock()
	created.Fire()
}

func (a *Agent) execute(p Pipe, m Message, created, after Signal) {
	ans := Message{Seq: m.Seq, Kind: MsgAnswer, HostID: a.HostID, Result: true}
	switch m.Kind {
	case MsgStart:
		if mutated(MutAgentOrderBeforeCreate) {
			a.domainCreated(m.Domain.Name, created)
		}
		err := a.HV.Start(*m.Domain)
		a.domainCreated(m.Domain.Name, created)
		if err != nil && mutated(MutAgentStartErrorIgnored) {
			err = nil
		}
		if err != nil {
			ans.Result, ans.Details = false, err.Error()
		} else if m.WaitReady > 0 {
			if err := a.HV.WaitReady(m.Domain.Name, m.WaitReady); err != nil {
				ans.Result, ans.Details = false, err.Error()
			}
		}
	case MsgStop:
		if after != nil {
			a.log("DEBUG", "StopCommand for %s waits for the StartCommand still creating its domain", m.VMName)
			after.Wait(0)
		}
		if m.CheckFirst && slices.Contains(a.HV.Running(), m.VMName) {
			ans.Result, ans.Details = false, "vm is still running on host"
		} else if err := a.HV.Stop(m.VMName); err != nil {
			ans.Result, ans.Details = false, err.Error()
		}
	case MsgPrepareForMigration:
		// LibvirtPrepareForMigrationCommandWrapper: the destination plugs the NICs and connects the
		// disks; nothing runs yet. A hypervisor that cannot receive a migration says so here.
		if _, ok := a.HV.(Migrator); !ok {
			ans.Result, ans.Details = false, "live migration is not supported by this hypervisor"
		}
	case MsgMigrate:
		mg, ok := a.HV.(Migrator)
		if !ok {
			ans.Result, ans.Details = false, "live migration is not supported by this hypervisor"
		} else if err := mg.MigrateTo(m.VMName, m.Target); err != nil {
			ans.Result, ans.Details = false, err.Error()
		}
	case MsgDeleteVolume:
		if err := a.HV.DeleteVolume(m.Path); err != nil {
			ans.Result, ans.Details = false, err.Error()
		}
	case MsgCheckOnHost, MsgFence, MsgCheckVM, MsgPingTest:
		a.executeHA(m, &ans)
	case MsgReady, MsgCheckHealth:
	default:
		ans.Result, ans.Details = false, "unsupported command "+m.Kind
	}
	_ = p.Send(ans)
}

// onLifecycleChange is LibvirtDomainListener.onLifecycleChange: a self-shutdown or crash of any domain
// triggers an out-of-band ping whose report is collected now.
func (a *Agent) onLifecycleChange(ev LifecycleEvent) {
	if a.Dead() || ev.Event != "STOPPED" {
		return
	}
	switch ev.Detail {
	case "SHUTDOWN", "CRASHED", "FAILED":
		a.log("INFO", "Triggering out of band status update due to completed self-shutdown or crash of VM %s", ev.Domain)
		a.triggerUpdate()
	}
}

// triggerUpdate builds the report at call time and sends it with outOfBand = true.
func (a *Agent) triggerUpdate() {
	a.mu.Lock()
	p := a.pipe
	a.mu.Unlock()
	if p == nil {
		return
	}
	report := a.HV.Running()
	seq := a.nextSeq()
	a.log("DEBUG", "Sending out of band ping with %d running domains", len(report))
	if err := p.Send(Message{Seq: seq, Kind: MsgPing, HostID: a.HostID, HasReport: true, Report: report, OutOfBand: true, CollectedAt: a.Env.Now()}); err != nil {
		a.log("WARN", "Unable to send ping update: %v", err)
	}
}
