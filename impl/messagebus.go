package impl

import "sync"

// messageBusGate is MessageBusBase's Gate (apache/cloudstack@6345cd54, framework/ipc/.../
// messagebus/MessageBusBase.java): publish enters it with wait=true, runs every subscriber of the
// subject in the publishing thread, then leaves. One gate per message bus, so per management server:
// while one subscriber runs, every other publish of that server waits, whatever its subject. Power
// sync publishes VM_POWER_STATE for each VM whose power state a report changed, and VMMI's
// HandlePowerStateReport runs under the gate, StopCommands and all: a slow stop in one host's
// handler holds every other host's report handling on this server.
//
// The Java's waiters are woken together (notifyAll) and race for the gate; here they enter in the
// order they came, which is one of the Java's orders and keeps the simulator deterministic. A
// publish from inside a subscriber (the gate's owner entering again) would wait for ever in the Java
// (enter checks no owner); nothing here publishes from a subscriber.
type messageBusGate struct{ permits }

// enter waits until the gate is the caller's.
func (g *messageBusGate) enter(env Env) { g.acquire(env, 1) }

// leave hands the gate to the longest waiter, or opens it.
func (g *messageBusGate) leave() { g.release() }

// permits is a counting semaphore whose waiters are served in arrival order: the message bus's gate
// (one permit) and a fixed thread pool's threads (AgentTaskPool). Arrival order is one of the orders
// the Java's notifyAll or a pool's LinkedBlockingQueue allow, and keeps the simulator deterministic; an
// acquire that does not wait makes no Env call, so it moves no schedule.
type permits struct {
	mu      sync.Mutex // never held across an Env call
	held    int
	waiters []Signal
}

// acquire takes one of max permits, waiting for one when all are held.
func (p *permits) acquire(env Env, max int) {
	p.mu.Lock()
	if p.held < max {
		p.held++
		p.mu.Unlock()
		return
	}
	sig := env.NewSignal()
	p.waiters = append(p.waiters, sig)
	p.mu.Unlock()
	sig.Wait(0) // release hands its permit over before it fires
}

// release hands the permit to the longest waiter, or gives it back.
func (p *permits) release() {
	p.mu.Lock()
	if len(p.waiters) == 0 {
		p.held--
		p.mu.Unlock()
		return
	}
	next := p.waiters[0]
	p.waiters = p.waiters[1:]
	p.mu.Unlock()
	next.Fire()
}

// publishVmPowerState is `_messageBus.publish(null, VM_POWER_STATE, GLOBAL, vmId)` from power sync
// (VirtualMachinePowerStateSyncImpl.processReport, apache@0ded906d): the gate, then the one
// subscriber, VMMI's HandlePowerStateReport, in the publishing thread.
func (s *Server) publishVmPowerState(t *Thread, id int64) {
	s.bus.enter(s.Env)
	defer s.bus.leave()
	s.handlePowerStateReport(t, id)
}
