package harness

import (
	"fmt"
	"slices"
	"strings"

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

func (c *Cluster) hostWorld(fault string) (hostWorld, error) {
	hw, ok := c.w.(hostWorld)
	if !ok {
		if err := c.w.capabilities().Refusal(FaultCap(fault)); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: this world declares it and does not implement it", fault)
	}
	return hw, nil
}

// HostPower powers a host off or on.
func (c *Cluster) HostPower(h string, on bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	hw, err := c.hostWorld("host-power-off")
	if err != nil {
		return err
	}
	if hw.poweredOff(h) == !on {
		return nil // overlapping faults: already so
	}
	if on {
		hw.hostPower(h, true)
		c.startAgent(h)
		return nil
	}
	c.Agents[h].PowerLoss()
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
	if c.msDown {
		return errServerDown
	}
	if err := c.Server.DeleteHost(h, true); err != nil {
		return err
	}
	return c.AgentStop(h, true)
}

// Heartbeat stops (on=false) or resumes a live host's storage heartbeat.
func (c *Cluster) Heartbeat(h string, on bool) error {
	if _, err := c.host(h); err != nil {
		return err
	}
	hw, err := c.hostWorld("heartbeat-fail")
	if err != nil {
		return err
	}
	hw.heartbeat(h, on)
	if !on {
		c.startKVMHAMonitor(h)
	}
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
