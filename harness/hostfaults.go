package harness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
)

// Host-level world states (issue 12 item 3): a host powered off, removed by an operator, or whose
// storage heartbeat fails while it runs. Powering a host and failing its heartbeat need a world that
// owns the host's power and its view of the shared storage: the simulator does; a real world says
// why it cannot.

// hostWorld is a world that can power hosts and fail their heartbeats.
type hostWorld interface {
	hostPower(h string, on bool)
	heartbeat(h string, on bool)
	poweredOff(h string) bool
}

// substrateFor is the cluster's substrate as the world interface T a fault needs, or the world's
// refusal of the fault.
func substrateFor[T any](c *Cluster, fault string) (T, error) {
	w, ok := c.w.(T)
	if !ok {
		if err := c.w.capabilities().Refusal(FaultCap(fault)); err != nil {
			return w, err
		}
		return w, fmt.Errorf("%s: this world declares it and does not implement it", fault)
	}
	return w, nil
}

// HostPower powers a host off or on.
func (c *Cluster) HostPower(h string, on bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	hw, err := substrateFor[hostWorld](c, "host-power-off")
	if err != nil {
		return err
	}
	if hw.poweredOff(h) == !on {
		return nil // overlapping faults: already so
	}
	if on {
		hw.hostPower(h, true)
		if !c.removed(h) { // a removed host boots without its agent (AgentStart)
			c.startAgent(h)
		}
		return nil
	}
	c.agent(h).PowerLoss()
	c.w.agentStopped(h)
	hw.hostPower(h, false)
	return nil
}

// RemoveHost is an operator's forced deleteHost, then a stop of the host's agent (so that it does not
// register the host again).
func (c *Cluster) RemoveHost(h string) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	if c.serverDown() {
		return errServerDown
	}
	// The forced deleteHost stops every VM of the host forced (deleteRoutingHost; scheduleRestart(vm,
	// false) stops an HA-enabled one forced before HA restarts it), which releases a VM whose
	// StopCommand cannot reach the host, and doDeleteHost sets those still marked there Stopped: the
	// operator's assertion that the host's VMs are stopped, as a caller's forced stop is
	// (detect/asserted.go). The VMs recorded on the host and those whose domains run there are the
	// operator's while the removal runs, and afterwards while a domain of theirs runs; so is any domain
	// that runs on the host from the removal's start (a start the delete's HA restart sent there
	// meanwhile).
	c.hostRemovalBegins(h)
	before := c.onHost(h)
	for _, v := range before {
		c.forceStopBegins(id(v.ID), v.Name)
	}
	err := c.deleteHost(h)
	if err == nil {
		c.procMu.Lock()
		if c.removedHosts == nil {
			c.removedHosts = map[string]bool{}
		}
		c.removedHosts[h] = true
		c.procMu.Unlock()
		err = c.AgentStop(h, true)
	}
	for _, v := range c.onHost(h) { // domains started there during the removal
		if removedHostsDomains && !slices.ContainsFunc(before, func(b *impl.VMVO) bool { return b.ID == v.ID }) {
			c.forceStopBegins(id(v.ID), v.Name)
			before = append(before, v)
		}
	}
	for _, v := range before {
		c.assertionEnds(v.Name, v.Name, "host-remove")
	}
	return err
}

// deleteHost calls deleteHost (forced) in a thread of the server, as the API servlet runs the
// synchronous DeleteHostCmd, and waits for it; a server that stops meanwhile takes the call with it
// (the operator's HTTP request fails, the delete done as far as it got), as it does an API call of a
// client: the caller is not left waiting on a job of a dead server.
func (c *Cluster) deleteHost(h string) error {
	srv, downs := c.Server(), c.serverStops()
	var mu sync.Mutex
	done, err := false, error(nil)
	srv.Go("deleteHost", func(*impl.Thread) {
		e := srv.DeleteHost(h, true)
		mu.Lock()
		done, err = true, e
		mu.Unlock()
	})
	for {
		mu.Lock()
		d, e := done, err
		mu.Unlock()
		switch {
		case d:
			return e
		case c.serverStops() != downs:
			return errServerDown
		}
		c.Sleep(100 * time.Millisecond)
	}
}

// onHost lists the VMs recorded on host h or whose domains run there, by id.
func (c *Cluster) onHost(h string) []*impl.VMVO {
	var out []*impl.VMVO
	add := func(v *impl.VMVO) {
		if v != nil && !slices.ContainsFunc(out, func(o *impl.VMVO) bool { return o.ID == v.ID }) {
			out = append(out, v)
		}
	}
	for _, v := range c.DB.VMs(func(v *impl.VMVO) bool { return !v.Removed && v.HostID == h }) {
		add(v)
	}
	for _, dom := range c.w.running(h) {
		add(c.DB.VMByName(dom))
	}
	slices.SortFunc(out, func(a, b *impl.VMVO) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Heartbeat stops (on=false) or resumes a live host's storage heartbeat.
func (c *Cluster) Heartbeat(h string, on bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	hw, err := substrateFor[hostWorld](c, "heartbeat-fail")
	if err != nil {
		return err
	}
	hw.heartbeat(h, on)
	if !on {
		c.startKVMHAMonitor(h)
	}
	return nil
}

// startFailer is a world whose hypervisors can fail the domains they are asked to create.
type startFailer interface {
	failStarts(h string, on bool)
}

// FailStarts makes a host's hypervisor fail (on) or create again every domain it is asked to start.
func (c *Cluster) FailStarts(h string, on bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	sf, err := substrateFor[startFailer](c, "start-fails")
	if err != nil {
		return err
	}
	sf.failStarts(h, on)
	return nil
}

// poweredOff says whether a host of the world is powered off (false where power is not simulated).
func (c *Cluster) poweredOff(h string) bool {
	hw, ok := c.w.(hostWorld)
	return ok && hw.poweredOff(h)
}

// In the simulator a power-off holds the host's link silent (no FIN, no RST: the server notices by
// missed pings); the power-on closes the dead connection, dropping what was held, as the rebooted
// host's kernel answers the old TCP stream with a reset.
func (w *simWorld) hostPower(h string, on bool) {
	hv := w.hosts[h]
	if on {
		w.fabric.CloseHost(h)
		w.fabric.Cut(h, false)
		hv.PowerOn()
		return
	}
	w.fabric.Cut(h, true)
	hv.PowerOff()
}

func (w *simWorld) heartbeat(h string, on bool) { w.hosts[h].StopHeartbeat(!on) }
func (w *simWorld) poweredOff(h string) bool {
	hv, ok := w.hosts[h]
	return ok && !hv.Powered()
}

// haView is the shared storage the simulated agents read for HA.
func (w *simWorld) haView() *sim.HAView { return sim.NewHAView(w.sched, w.hosts) }

var _ hostWorld = (*simWorld)(nil)

// withDomainsOf adds to a host power-off's targets the VMs whose domains run on the host (the power
// takes them down, as a crash does one), and to a host removal's the VMs recorded on it (the forced
// deleteHost stops them): the VM model reads the fault's targets.
func (c *Cluster) withDomainsOf(kind string, targets []string) []string {
	if kind != "host-power-off" && kind != "host-remove" {
		return targets
	}
	out := append([]string(nil), targets...)
	for _, t := range targets {
		h, ok := strings.CutPrefix(t, "host:")
		if !ok || !slices.Contains(c.HostIDs, h) {
			continue
		}
		if kind == "host-remove" { // the forced deleteHost stops every VM the records put on it
			for _, v := range c.DB.VMs(func(v *impl.VMVO) bool { return !v.Removed && v.HostID == h }) {
				out = append(out, VMObj(v.ID))
			}
			continue
		}
		for _, dom := range c.w.running(h) {
			if v := c.DB.VMByName(dom); v != nil {
				out = append(out, VMObj(v.ID))
			}
		}
	}
	return out
}
