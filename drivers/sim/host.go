package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/csconform/csconform/impl"
)

// Host is an in-memory hypervisor: it behaves as libvirt does for the agent (define+create takes a
// moment, a stopped domain takes 1–2 s to be reaped, events for shutdowns and crashes) and it is the
// truth the invariant checks read.
type Host struct {
	s         *Scheduler
	ID        string
	domains   map[string]*domain
	listeners []func(impl.LifecycleEvent)
	deleted   map[string]bool
	created   map[string]bool // volume files a domain was defined with (VolumeFiles)
	// BootDelay gives the time from create to the guest's "ready" line for a domain.
	BootDelay func(spec impl.DomainSpec) time.Duration
	version   uint64 // counts the changes to domains (Version)
	// running is Running's answer at version runningAt (each ping asks; few change anything); never
	// written in place once handed out
	running   []string
	runningAt uint64
	// off: powered off; beatStopped: when the storage heartbeat stopped (zero: beating); beatFailing:
	// its writes fail (a fault on the storage path, which a reboot does not cure). See power.go.
	off         bool
	beatStopped time.Time
	beatFailing bool
	// failStarts: the hypervisor fails every domain it is asked to create (FailStarts)
	failStarts bool
	// incoming: the domains a live migration is copying here (Receiving), defined and paused until
	// the copy ends; they run nothing yet, so Running and Domains leave them out
	incoming map[string]int
	// Peers finds another host of the cluster by id, the destination of a live migration (nil: this
	// host migrates nothing).
	Peers func(id string) *Host
}

// Version changes whenever what Domains returns may have: a checker re-reads only the hosts whose
// version moved.
func (h *Host) Version() uint64 { return h.version }

// changed moves the host's version and its scheduler's DomainsVersion.
func (h *Host) changed() {
	h.version++
	h.s.domainsVer++
}

type domain struct {
	spec    impl.DomainSpec
	running bool
	ready   bool
	readyAt []impl.Signal
}

// Domain is a domain as the host really runs it.
type Domain struct {
	Name    string
	Type    string
	Running bool
	IPs     []string
	Disks   []string
}

// NewHost returns an empty host. Routers take 36–41 s to boot and user guests 6–8 s unless BootDelay
// says otherwise.
func NewHost(s *Scheduler, id string) *Host {
	h := &Host{s: s, ID: id, domains: map[string]*domain{}, deleted: map[string]bool{}, created: map[string]bool{}}
	h.BootDelay = func(spec impl.DomainSpec) time.Duration {
		if spec.Type == "DomainRouter" {
			return 36*time.Second + time.Duration(s.rng.Int64N(int64(5*time.Second)))
		}
		return 6*time.Second + time.Duration(s.rng.Int64N(int64(2*time.Second)))
	}
	return h
}

func (h *Host) Start(spec impl.DomainSpec) error {
	if d, ok := h.domains[spec.Name]; ok && d.running {
		return fmt.Errorf("operation failed: domain '%s' already exists", spec.Name)
	}
	for _, p := range spec.Disks {
		if h.deleted[p] {
			return fmt.Errorf("Cannot access storage file '%s': No such file or directory", p)
		}
	}
	// define + create
	h.s.Sleep(300*time.Millisecond + time.Duration(h.s.rng.Int64N(int64(700*time.Millisecond))))
	if h.off {
		return fmt.Errorf("host %s lost power", h.ID)
	}
	if h.failStarts {
		return impl.StartFailure(spec.Name)
	}
	d := &domain{spec: spec, running: true}
	h.domains[spec.Name] = d
	for _, p := range spec.Disks {
		h.created[p] = true
	}
	h.changed()
	h.emit(impl.LifecycleEvent{Domain: spec.Name, Event: "STARTED", Detail: "BOOTED"})
	h.s.After(h.BootDelay(spec), func() {
		if h.domains[spec.Name] == d && d.running {
			d.ready = true
			for _, g := range d.readyAt {
				g.Fire()
			}
			d.readyAt = nil
		}
	})
	return nil
}

func (h *Host) WaitReady(name string, timeout time.Duration) error {
	d, ok := h.domains[name]
	if !ok || !d.running {
		return fmt.Errorf("domain '%s' is not running", name)
	}
	if d.ready {
		return nil
	}
	g := h.s.NewSignal()
	d.readyAt = append(d.readyAt, g)
	if !g.Wait(timeout) {
		return fmt.Errorf("domain '%s' not ready after %s", name, timeout)
	}
	if !d.running {
		return fmt.Errorf("domain '%s' stopped while booting", name)
	}
	return nil
}

func (h *Host) Stop(name string) error {
	d, ok := h.domains[name]
	if !ok || !d.running {
		delete(h.domains, name)
		h.changed()
		return nil
	}
	// virDomainDestroy, then libvirt reaps the process: 1–2 s here.
	h.s.Sleep(time.Second + time.Duration(h.s.rng.Int64N(int64(time.Second))))
	if h.domains[name] == d && d.running {
		h.halt(d, "DESTROYED")
	}
	delete(h.domains, name)
	h.changed()
	return nil
}

func (h *Host) halt(d *domain, detail string) {
	d.running = false
	h.changed()
	d.ready = false
	for _, g := range d.readyAt {
		g.Fire()
	}
	d.readyAt = nil
	h.emit(impl.LifecycleEvent{Domain: d.spec.Name, Event: "STOPPED", Detail: detail})
}

// Running is shared, not copied: every ping asks, and a quiet host's answer does not change. A
// change builds a new array, so an answer already handed out (a report on the wire) stays as it
// was; the answer's capacity is its length, so a caller's append copies instead of writing into it.
func (h *Host) Running() []string {
	if h.runningAt != h.version { // a new host, at version 0, runs nothing: nil is its answer
		var names []string
		for n, d := range h.domains {
			if d.running {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		h.running, h.runningAt = slices.Clip(names), h.version
	}
	return h.running
}

func (h *Host) DeleteVolume(path string) error {
	for _, n := range h.Running() {
		for _, p := range h.domains[n].spec.Disks {
			if p == path {
				return fmt.Errorf("failed to delete volume %s: image is in use by domain %s", path, n)
			}
		}
	}
	h.deleted[path] = true
	return nil
}

// VolumeFiles says which volume files this host has created (a domain was defined with them) and
// which it has deleted. Primary storage is shared: a file is on it when some host created it and no
// host deleted it (the storage-leak check's truth; nothing here reads it).
func (h *Host) VolumeFiles() (created, deleted map[string]bool) { return h.created, h.deleted }

func (h *Host) Subscribe(fn func(impl.LifecycleEvent)) { h.listeners = append(h.listeners, fn) }

// Unsubscribe drops every listener (the agent process went away; a new one subscribes again).
func (h *Host) Unsubscribe() { h.listeners = nil }

func (h *Host) emit(ev impl.LifecycleEvent) {
	for _, fn := range h.listeners {
		fn(ev)
	}
}

// Crash kills a domain's QEMU (STOPPED/CRASHED... libvirt says FAILED for kill -9, CRASHED for a guest
// panic; both trigger the agent's out-of-band ping).
func (h *Host) Crash(name, detail string) error {
	d, ok := h.domains[name]
	if !ok || !d.running {
		return fmt.Errorf("domain %s is not running on %s", name, h.ID)
	}
	h.halt(d, detail)
	delete(h.domains, name)
	h.changed()
	return nil
}

// GuestShutdown is the guest powering itself off: SHUTDOWN, then STOPPED/SHUTDOWN once reaped.
func (h *Host) GuestShutdown(name string) error {
	d, ok := h.domains[name]
	if !ok || !d.running {
		return fmt.Errorf("domain %s is not running on %s", name, h.ID)
	}
	h.emit(impl.LifecycleEvent{Domain: name, Event: "SHUTDOWN", Detail: "FINISHED"})
	h.s.After(time.Second+time.Duration(h.s.rng.Int64N(int64(time.Second))), func() {
		if h.domains[name] == d && d.running {
			h.halt(d, "SHUTDOWN")
			delete(h.domains, name)
			h.changed()
		}
	})
	return nil
}

// Domains is the truth: every running domain with what it holds.
func (h *Host) Domains() []Domain {
	var out []Domain
	for _, n := range h.Running() {
		d := h.domains[n]
		out = append(out, Domain{Name: n, Type: d.spec.Type, Running: true,
			IPs: append([]string(nil), d.spec.IPs...), Disks: append([]string(nil), d.spec.Disks...)})
	}
	return out
}

// MigrateTo live-migrates a running domain to the host dest, as libvirt's peer-to-peer migration
// (LibvirtMigrateCommandWrapper → virDomainMigrate) does: the destination defines the incoming domain
// (paused: a lookup there finds it, Receiving), the memory is copied (1–3 s here), the domain resumes
// on the destination and only then stops on the source (STOPPED/MIGRATED, which the agent does not
// report out of band). Between the two, for a
// moment of its own, the domain exists on both hosts. A source domain that stops, or a destination
// that loses power, during the copy fails the migration and leaves no domain on the destination.
func (h *Host) MigrateTo(name, dest string) error {
	d, ok := h.domains[name]
	if !ok || !d.running {
		return fmt.Errorf("Domain not found: no domain with matching name '%s'", name)
	}
	var to *Host
	if h.Peers != nil {
		to = h.Peers(dest)
	}
	if to == nil || to == h || to.off {
		return fmt.Errorf("unable to connect to server at '%s': No route to host", dest)
	}
	if t, ok := to.domains[name]; ok && t.running {
		return fmt.Errorf("operation failed: domain '%s' already exists with uuid on %s", name, dest)
	}
	for _, p := range d.spec.Disks {
		if h.deleted[p] {
			return fmt.Errorf("Cannot access storage file '%s': No such file or directory", p)
		}
	}
	to.receive(name)
	h.s.Sleep(time.Second + time.Duration(h.s.rng.Int64N(int64(2*time.Second))))
	to.received(name) // the copy is over: the domain resumes there below, or the migration fails
	if h.domains[name] != d || !d.running {
		return fmt.Errorf("operation failed: domain '%s' is not running", name)
	}
	if to.off || h.off {
		return fmt.Errorf("operation failed: migration job: unexpectedly failed")
	}
	nd := &domain{spec: d.spec, running: true, ready: d.ready}
	to.domains[name] = nd
	for _, p := range d.spec.Disks {
		to.created[p] = true
	}
	to.changed()
	to.emit(impl.LifecycleEvent{Domain: name, Event: "STARTED", Detail: "MIGRATED"})
	// the source's QEMU is torn down once the destination has resumed
	h.s.Sleep(50 * time.Millisecond)
	if h.domains[name] == d && d.running {
		h.halt(d, "MIGRATED")
		delete(h.domains, name)
		h.changed()
	}
	return nil
}

// receive and received bracket the memory copy of a live migration to this host: libvirt's incoming
// domain, paused, from its definition before the copy until the copy ends (resumed here, or torn down).
func (h *Host) receive(name string) {
	if h.incoming == nil {
		h.incoming = map[string]int{}
	}
	h.incoming[name]++
}

func (h *Host) received(name string) {
	if h.incoming[name]--; h.incoming[name] <= 0 {
		delete(h.incoming, name)
	}
}

// Receiving says whether a live migration is copying the domain name to this host: the paused
// incoming domain a lookup by name finds (impl.Receiver). A host without power receives nothing.
func (h *Host) Receiving(name string) bool { return !h.off && h.incoming[name] > 0 }

var _ impl.Hypervisor = (*Host)(nil)
var _ impl.Migrator = (*Host)(nil)
var _ impl.Receiver = (*Host)(nil)

// FailStarts makes the hypervisor fail (on) every domain it is asked to create, as QEMU does when it
// cannot start one (the start-fails fault); its running domains go on.
func (h *Host) FailStarts(on bool) { h.failStarts = on }
