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
type messageBusGate struct {
	mu      sync.Mutex // never held across an Env call
	held    bool
	waiters []Signal
}

// enter waits until the gate is the caller's.
func (g *messageBusGate) enter(env Env) {
	g.mu.Lock()
	if !g.held {
		g.held = true
		g.mu.Unlock()
		return
	}
	sig := env.NewSignal()
	g.waiters = append(g.waiters, sig)
	g.mu.Unlock()
	sig.Wait(0) // leave hands the gate over before it fires
}

// leave hands the gate to the longest waiter, or opens it.
func (g *messageBusGate) leave() {
	g.mu.Lock()
	if len(g.waiters) == 0 {
		g.held = false
		g.mu.Unlock()
		return
	}
	next := g.waiters[0]
	g.waiters = g.waiters[1:]
	g.mu.Unlock()
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
