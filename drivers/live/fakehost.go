package live

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/csconform/csconform/impl"
)

// FakeHost is a FAKE hypervisor that runs in real time, in the agent's process: no domain here is a
// real process. It behaves as drivers/sim.Host does (define+create takes a moment, a guest is ready a
// boot delay later, a destroyed domain takes a moment to be reaped, lifecycle events for shutdowns and
// crashes) with short real delays, so the server and agents can be exercised over real TCP without
// libvirt. It is what `csconform agent --hypervisor sim` runs.
type FakeHost struct {
	ID  string
	env impl.Env

	mu        sync.Mutex
	domains   map[string]*fakeDomain
	deleted   map[string]bool
	created   map[string]bool // volume files a domain was defined with (VolumeFiles)
	listeners []func(impl.LifecycleEvent)

	// BootDelay is the time from create to the guest's "ready" (default: routers 1 s, guests 300 ms).
	BootDelay func(spec impl.DomainSpec) time.Duration
	// CreateDelay and DestroyDelay are define+create and destroy+reap (default 100 ms each).
	CreateDelay, DestroyDelay time.Duration

	routerBoot time.Duration  // SetRouterBoot's; 0: BootDelay
	failStarts bool           // FailStarts's: every create fails
	incoming   map[string]int // the domains a live migration is copying here (Receiving)

	// Peers finds another host of the world by id, the destination of a live migration (nil: this
	// host migrates nothing). MigrateDelay is the memory copy (default 300 ms).
	Peers        func(id string) *FakeHost
	MigrateDelay time.Duration
}

type fakeDomain struct {
	spec    impl.DomainSpec
	running bool
	ready   bool
	readyAt []impl.Signal
}

// NewFakeHost returns an empty fake host whose delays run on env.
func NewFakeHost(env impl.Env, id string) *FakeHost {
	return &FakeHost{ID: id, env: env, domains: map[string]*fakeDomain{}, deleted: map[string]bool{}, created: map[string]bool{},
		CreateDelay: 100 * time.Millisecond, DestroyDelay: 100 * time.Millisecond,
		BootDelay: func(spec impl.DomainSpec) time.Duration {
			if spec.Type == "DomainRouter" {
				return time.Second
			}
			return 300 * time.Millisecond
		}}
}

// Start defines and creates a domain.
func (h *FakeHost) Start(spec impl.DomainSpec) error {
	h.mu.Lock()
	if d, ok := h.domains[spec.Name]; ok && d.running {
		h.mu.Unlock()
		return fmt.Errorf("operation failed: domain '%s' already exists", spec.Name)
	}
	for _, p := range spec.Disks {
		if h.deleted[p] {
			h.mu.Unlock()
			return fmt.Errorf("Cannot access storage file '%s': No such file or directory", p)
		}
	}
	h.mu.Unlock()
	h.env.Sleep(h.CreateDelay)
	d := &fakeDomain{spec: spec, running: true}
	h.mu.Lock()
	if h.failStarts {
		h.mu.Unlock()
		return impl.StartFailure(spec.Name)
	}
	h.domains[spec.Name] = d
	for _, p := range spec.Disks {
		h.created[p] = true
	}
	h.mu.Unlock()
	h.emit(impl.LifecycleEvent{Domain: spec.Name, Event: "STARTED", Detail: "BOOTED"})
	boot := h.BootDelay(spec)
	h.mu.Lock()
	if spec.Type == "DomainRouter" && h.routerBoot > 0 {
		boot = h.routerBoot
	}
	h.mu.Unlock()
	h.env.Go("hv/"+h.ID+"/boot/"+spec.Name, func() {
		h.env.Sleep(boot)
		h.mu.Lock()
		var fire []impl.Signal
		if h.domains[spec.Name] == d && d.running {
			d.ready = true
			fire, d.readyAt = d.readyAt, nil
		}
		h.mu.Unlock()
		for _, g := range fire {
			g.Fire()
		}
	})
	return nil
}

// MigrateTo live-migrates a running domain to the host dest as drivers/sim.Host does (libvirt's
// peer-to-peer migration): the copy takes MigrateDelay (the paused incoming domain on dest meanwhile,
// Receiving), the domain then runs on dest, and only a
// moment later (DestroyDelay) stops here (STOPPED/MIGRATED, which the agent does not report out of
// band). A domain that stopped here meanwhile, or a dest that already runs one of that name, fails it.
func (h *FakeHost) MigrateTo(name, dest string) error {
	var to *FakeHost
	if h.Peers != nil {
		to = h.Peers(dest)
	}
	if to == nil || to == h {
		return fmt.Errorf("unable to connect to server at '%s': No route to host", dest)
	}
	h.mu.Lock()
	d, ok := h.domains[name]
	if !ok || !d.running {
		h.mu.Unlock()
		return fmt.Errorf("Domain not found: no domain with matching name '%s'", name)
	}
	spec, ready := d.spec, d.ready
	h.mu.Unlock()
	copyTime := h.MigrateDelay
	if copyTime == 0 {
		copyTime = 300 * time.Millisecond
	}
	to.receive(name, +1)
	h.env.Sleep(copyTime)
	to.receive(name, -1) // the copy is over: the domain resumes there below, or the migration fails
	h.mu.Lock()
	if h.domains[name] != d || !d.running {
		h.mu.Unlock()
		return fmt.Errorf("operation failed: domain '%s' is not running", name)
	}
	h.mu.Unlock()
	to.mu.Lock()
	if t, ok := to.domains[name]; ok && t.running {
		to.mu.Unlock()
		return fmt.Errorf("operation failed: domain '%s' already exists on %s", name, dest)
	}
	to.domains[name] = &fakeDomain{spec: spec, running: true, ready: ready}
	for _, p := range spec.Disks {
		to.created[p] = true
	}
	to.mu.Unlock()
	to.emit(impl.LifecycleEvent{Domain: name, Event: "STARTED", Detail: "MIGRATED"})
	h.env.Sleep(h.DestroyDelay)
	h.mu.Lock()
	var ev *impl.LifecycleEvent
	var fire []impl.Signal
	if h.domains[name] == d && d.running {
		ev, fire = h.halt(d, "MIGRATED")
		delete(h.domains, name)
	}
	h.mu.Unlock()
	h.after(ev, fire)
	return nil
}

// receive counts a live migration copying the domain name here in (+1) or out (-1): libvirt's paused
// incoming domain, from its definition before the copy until the copy ends.
func (h *FakeHost) receive(name string, by int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.incoming == nil {
		h.incoming = map[string]int{}
	}
	if h.incoming[name] += by; h.incoming[name] <= 0 {
		delete(h.incoming, name)
	}
}

// Receiving says whether a live migration is copying the domain name here (impl.Receiver), as
// drivers/sim.Host does.
func (h *FakeHost) Receiving(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.incoming[name] > 0
}

var _ impl.Migrator = (*FakeHost)(nil)
var _ impl.Receiver = (*FakeHost)(nil)

// WaitReady waits until the guest is ready, or timeout.
func (h *FakeHost) WaitReady(name string, timeout time.Duration) error {
	h.mu.Lock()
	d, ok := h.domains[name]
	if !ok || !d.running {
		h.mu.Unlock()
		return fmt.Errorf("domain '%s' is not running", name)
	}
	if d.ready {
		h.mu.Unlock()
		return nil
	}
	g := h.env.NewSignal()
	d.readyAt = append(d.readyAt, g)
	h.mu.Unlock()
	if !g.Wait(timeout) {
		return fmt.Errorf("domain '%s' not ready after %s", name, timeout)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !d.running {
		return fmt.Errorf("domain '%s' stopped while booting", name)
	}
	return nil
}

// Stop destroys a domain; a missing one is not an error.
func (h *FakeHost) Stop(name string) error {
	h.mu.Lock()
	d, ok := h.domains[name]
	if !ok || !d.running {
		delete(h.domains, name)
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	h.env.Sleep(h.DestroyDelay)
	h.mu.Lock()
	var ev *impl.LifecycleEvent
	var fire []impl.Signal
	if h.domains[name] == d && d.running {
		ev, fire = h.halt(d, "DESTROYED")
	}
	delete(h.domains, name)
	h.mu.Unlock()
	h.after(ev, fire)
	return nil
}

// halt marks d stopped; the caller fires and emits (after) once it has let go of mu.
func (h *FakeHost) halt(d *fakeDomain, detail string) (*impl.LifecycleEvent, []impl.Signal) {
	d.running, d.ready = false, false
	fire := d.readyAt
	d.readyAt = nil
	return &impl.LifecycleEvent{Domain: d.spec.Name, Event: "STOPPED", Detail: detail}, fire
}

func (h *FakeHost) after(ev *impl.LifecycleEvent, fire []impl.Signal) {
	for _, g := range fire {
		g.Fire()
	}
	if ev != nil {
		h.emit(*ev)
	}
}

// Running lists the powered-on domains, sorted.
func (h *FakeHost) Running() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running()
}

func (h *FakeHost) running() []string {
	var names []string
	for n, d := range h.domains {
		if d.running {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// VolumeFiles says which volume files this host has created (a domain was defined with them) and
// which it has deleted (copies: the storage-leak check's truth).
func (h *FakeHost) VolumeFiles() (created, deleted map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.created), maps.Clone(h.deleted)
}

// DeleteVolume removes a volume unless a running domain holds it.
func (h *FakeHost) DeleteVolume(path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.running() {
		if slices.Contains(h.domains[n].spec.Disks, path) {
			return fmt.Errorf("failed to delete volume %s: image is in use by domain %s", path, n)
		}
	}
	h.deleted[path] = true
	return nil
}

// Subscribe registers a lifecycle listener.
func (h *FakeHost) Subscribe(fn func(impl.LifecycleEvent)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listeners = append(h.listeners, fn)
}

func (h *FakeHost) emit(ev impl.LifecycleEvent) {
	h.mu.Lock()
	ls := slices.Clone(h.listeners)
	h.mu.Unlock()
	for _, fn := range ls {
		fn(ev)
	}
}

// Crash kills a domain (libvirt says STOPPED/FAILED for a killed QEMU, CRASHED for a guest panic).
func (h *FakeHost) Crash(name, detail string) error {
	h.mu.Lock()
	d, ok := h.domains[name]
	if !ok || !d.running {
		h.mu.Unlock()
		return fmt.Errorf("domain %s is not running on %s", name, h.ID)
	}
	ev, fire := h.halt(d, detail)
	delete(h.domains, name)
	h.mu.Unlock()
	h.after(ev, fire)
	return nil
}

// GuestShutdown is the guest powering itself off: SHUTDOWN/FINISHED at once, then STOPPED/SHUTDOWN
// once the domain is reaped (a second later), as drivers/sim.Host does.
func (h *FakeHost) GuestShutdown(name string) error {
	h.mu.Lock()
	d, ok := h.domains[name]
	if !ok || !d.running {
		h.mu.Unlock()
		return fmt.Errorf("domain %s is not running on %s", name, h.ID)
	}
	h.mu.Unlock()
	h.emit(impl.LifecycleEvent{Domain: name, Event: "SHUTDOWN", Detail: "FINISHED"})
	h.env.Go("hv/"+h.ID+"/shutdown/"+name, func() {
		h.env.Sleep(time.Second)
		h.mu.Lock()
		var ev *impl.LifecycleEvent
		var fire []impl.Signal
		if h.domains[name] == d && d.running {
			ev, fire = h.halt(d, "SHUTDOWN")
			delete(h.domains, name)
		}
		h.mu.Unlock()
		h.after(ev, fire)
	})
	return nil
}

// SetRouterBoot makes router guests created from now on take d to say ready (0: BootDelay again).
// How long a router boots is the host's business (its hypervisor, its guest image), not the server's.
func (h *FakeHost) SetRouterBoot(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.routerBoot = d
}

// Domain is a domain as the fake host runs it.
type Domain struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	IPs   []string `json:"ips,omitempty"`
	Disks []string `json:"disks,omitempty"`
}

// Domains lists the running domains.
func (h *FakeHost) Domains() []Domain {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Domain
	for _, n := range h.running() {
		d := h.domains[n]
		out = append(out, Domain{Name: n, Type: d.spec.Type, IPs: slices.Clone(d.spec.IPs), Disks: slices.Clone(d.spec.Disks)})
	}
	return out
}

var _ impl.Hypervisor = (*FakeHost)(nil)

// FailStarts makes the hypervisor fail (on) every domain it is asked to create, as QEMU does when it
// cannot start one (the start-fails fault), as drivers/sim.Host does; running domains go on.
func (h *FakeHost) FailStarts(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failStarts = on
}
