// Package impl is the reference management server and KVM-style agent: straight-line Go that reads
// like CloudStack's threads. It never touches time, goroutines, sockets or hypervisors itself; it asks
// an Env, a Transport and a Hypervisor for them, so the same code runs in the deterministic simulator
// and in the real worlds.
package impl

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Env is the world's clock and task runner. In the simulator time is virtual and only one task runs at
// a time; in the real world these are time and goroutines.
type Env interface {
	Now() time.Time
	// Sleep parks the calling task for d (d <= 0 still yields to other runnable tasks).
	Sleep(d time.Duration)
	// Go starts a background task. The name says which thread of CloudStack it plays.
	Go(name string, fn func())
	// NewSignal returns a one-shot event that tasks can wait on.
	NewSignal() Signal
}

// PointKind says what a task is about to do at a scheduling point.
type PointKind uint8

// The scheduling points: where a check-then-act race on shared state can be cut in two.
const (
	PointRead   PointKind = iota + 1 // a database read
	PointWrite                       // a database write
	PointLock                        // a lock-table attempt (TryLock)
	PointUnlock                      // a lock-table release
	PointSend                        // a message handed to the agent link
	PointRecv                        // a message taken from the agent link
)

var pointNames = [...]string{"", "read", "write", "lock", "unlock", "send", "recv"}

func (k PointKind) String() string {
	if int(k) < len(pointNames) {
		return pointNames[k]
	}
	return "point?"
}

// Preempter is an Env that may switch tasks at scheduling points, not only where a task blocks: the
// simulator's bounded-preemption strategy, which makes a read-then-write race on the database
// reachable. Point is called by the task itself, before the operation and holding no lock; it may
// park the task and return later, at the same virtual instant. Real worlds do not implement it: their
// goroutines are preempted anyway.
type Preempter interface {
	Point(k PointKind)
}

// Reaper is an Env whose processes die while their tasks run on: real goroutines cannot be stopped
// where they stand, so a task of a closed process unwinds through its deferred calls (CloudStack's
// finally blocks) or runs on until it parks. Reap ends the calling task if its process is dead. The
// database calls it before every access, where the simulator's Now unwinds a killed task, so that in
// every world a dead process reads and writes nothing more: a killed JVM runs no finally block. So an
// implementNetwork cut by a restart leaves its network Implementing and its lock row behind: the
// finally that would fire OperationFailed, run shutdownNetwork and release the lock never runs
// (apache/cloudstack@1527032a
// engine/orchestration/src/main/java/org/apache/cloudstack/engine/orchestration/NetworkOrchestrator.java,
// implementNetwork), and the next incarnation fails the job and moves only the job's own instance, the
// VM, out of its transitional state (apache/cloudstack@04b49bc3
// framework/jobs/src/main/java/org/apache/cloudstack/framework/jobs/impl/AsyncJobManagerImpl.java,
// start → cleanupLeftOverJobs → cleanupResources, PR #8394, in releases since 4.19: "job cancelled
// because of management server restart or shutdown").
type Reaper interface {
	Reap()
	// Dead says whether the calling task's process is dead, without ending it: the database asks
	// once it holds its lock, where the task must release it before it ends.
	Dead() bool
}

// point is a scheduling point of env's running task (nothing when env is not a Preempter).
func point(env Env, k PointKind) {
	if p, ok := env.(Preempter); ok {
		p.Point(k)
	}
}

// coopMutex is a mutex never held across a scheduling point. In a cooperative world (the simulator,
// a Preempter: one task runs at a time and yields only at its points) finding it held means another
// task kept it while parked, or never released it, and nothing will ever release it: waiting would
// hang the run for ever, so Lock panics with the deadlock instead — a finding, not a hang. In a real
// world it is a plain mutex.
type coopMutex struct {
	sync.Mutex
	env  Env
	name string
}

func (m *coopMutex) Lock() {
	if _, coop := m.env.(Preempter); !coop {
		m.Mutex.Lock()
		return
	}
	if !m.TryLock() {
		panic(fmt.Sprintf("deadlock: %s is held by a task that is parked (a critical section that yields or never unlocks); the simulator runs one task at a time, so no task can ever release it", m.name))
	}
	if s, ok := m.env.(Spinner); ok {
		s.Spin()
	}
}

// Spinner is a cooperative Env that counts the locks a task takes without parking: a loop that waits
// with no sleep (only a lock taken at each turn) would otherwise hold the one running slot for ever.
type Spinner interface {
	Spin()
}

// Signal is a one-shot event.
type Signal interface {
	Fire()
	// Wait parks until Fire or until timeout passes (timeout <= 0 waits forever); true if fired.
	Wait(timeout time.Duration) bool
}

// ErrClosed is returned by a Pipe whose connection is gone.
var ErrClosed = errors.New("connection closed")

// Pipe is one management-server ↔ agent connection as seen from one end. A cut link loses messages
// without closing the pipe: as in CloudStack, only missed pings or a timed-out command notice it.
type Pipe interface {
	Send(m Message) error
	// Recv parks until a message arrives; ErrClosed once the connection is closed and drained.
	Recv() (Message, error)
	Close()
}

// Transport connects agents to the management server.
type Transport interface {
	// Dial is the agent's side: connect to the management server.
	Dial(hostID string) (Pipe, error)
	// Accept is the management server's side: the next agent connection.
	Accept() (Pipe, error)
}

// Hypervisor is one host's domains as the agent sees them (libvirt on KVM).
type Hypervisor interface {
	// Start defines and creates a domain; it returns once the domain runs (not once the guest is ready).
	Start(d DomainSpec) error
	// WaitReady parks until the guest says it is ready (a router's boot), or timeout.
	WaitReady(name string, timeout time.Duration) error
	// Stop destroys the domain and returns once it is gone; a domain that does not exist is not an error.
	Stop(name string) error
	// Running lists the powered-on domains, sorted by name. The caller must not modify the answer
	// (a driver may hand the same slice to every caller until a domain changes).
	Running() []string
	// DeleteVolume removes a volume; it fails while a running domain holds it open.
	DeleteVolume(path string) error
	// Subscribe registers the listener for lifecycle events (libvirt's domain event callback).
	Subscribe(fn func(LifecycleEvent))
}

// Migrator is a hypervisor that can live-migrate a domain to another host of its cluster, as
// LibvirtMigrateCommandWrapper has libvirt do it (peer to peer): the domain comes to run on destHost
// before it stops here. An agent whose hypervisor is not one answers a MigrateCommand with a failure.
type Migrator interface {
	MigrateTo(name, destHost string) error
}

// Receiver is a hypervisor that can say a domain is coming in by live migration: libvirt defines the
// incoming domain on the destination, paused, before the memory copy and resumes it there once the
// copy is done, so a lookup by name on the destination finds it throughout. The KVM agent's
// CheckVirtualMachineCommand asks exactly that (LibvirtCheckVirtualMachineCommandWrapper.execute →
// LibvirtComputingResource.getVmState: domainLookupByName, then s_powerStatesTable, which maps
// VIR_DOMAIN_PAUSED to PowerOn; apache/cloudstack@400e1ee7 and @e6b43860). A hypervisor that is not
// one receives nothing it could be asked about.
type Receiver interface {
	Receiving(name string) bool
}

// receiving says whether hv is receiving the domain name by live migration.
func receiving(hv Hypervisor, name string) bool {
	r, ok := hv.(Receiver)
	return ok && r.Receiving(name)
}

// StartFailure is libvirt's error for a domain QEMU could not start (the start-fails fault): the one
// text every simulated hypervisor answers a refused start with, as a real one would.
func StartFailure(domain string) error {
	return fmt.Errorf("internal error: qemu unexpectedly closed the monitor: domain %s: cannot set up guest memory 'pc.ram': Cannot allocate memory", domain)
}

// DomainSpec is what a StartCommand asks the host to run.
type DomainSpec struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"` // "User" or "DomainRouter"
	MemoryMiB int      `json:"memoryMiB"`
	IPs       []string `json:"ips,omitempty"`
	MACs      []string `json:"macs,omitempty"`
	Disks     []string `json:"disks,omitempty"`
}

// LifecycleEvent is a libvirt domain lifecycle event.
type LifecycleEvent struct {
	Domain string `json:"domain"`
	Event  string `json:"event"`  // "STARTED", "STOPPED", "SHUTDOWN"
	Detail string `json:"detail"` // for STOPPED: "SHUTDOWN", "CRASHED", "FAILED", "DESTROYED"
}
