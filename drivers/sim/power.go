package sim

import (
	"slices"
	"time"

	"github.com/csconform/csconform/impl"
)

// HeartbeatWindow is how old a host's storage heartbeat may be before a neighbour's check calls its
// heart stopped: KVMHAMonitor writes it every 60 s (heartbeat update frequency), so one missed write.
const HeartbeatWindow = 60 * time.Second

// PowerOff is the host losing power: its domains are gone without a lifecycle event (libvirtd went
// with them) and its storage heartbeat stops.
func (h *Host) PowerOff() {
	if h.off {
		return
	}
	h.off = true
	for _, n := range h.Running() {
		d := h.domains[n]
		d.running, d.ready = false, false
		for _, g := range d.readyAt {
			g.Fire()
		}
		d.readyAt = nil
	}
	h.domains = map[string]*domain{}
	h.changed() // Running's cache and the incremental checker see the domains go
	h.listeners = nil
	if h.beatStopped.IsZero() {
		h.beatStopped = h.s.Now()
	}
}

// PowerOn boots the host again: no domains; the heartbeat is written again unless its writes still
// fail (StopHeartbeat: a fault on the storage path outlives a reboot).
func (h *Host) PowerOn() {
	h.off = false
	if !h.beatFailing {
		h.beatStopped = time.Time{}
	}
}

// Powered says whether the host is on.
func (h *Host) Powered() bool { return !h.off }

// StopHeartbeat stops (on) or resumes (off) the host's writes of its storage heartbeat; its domains
// and agent are not touched (a heartbeat failure on a live host).
func (h *Host) StopHeartbeat(on bool) {
	h.beatFailing = on
	switch {
	case on && h.beatStopped.IsZero():
		h.beatStopped = h.s.Now()
	case !on && !h.off:
		h.beatStopped = time.Time{}
	}
}

// HeartbeatFailing says whether the host's heartbeat writes fail (StopHeartbeat), powered or not.
func (h *Host) HeartbeatFailing() bool { return h.beatFailing }

// HAView is the shared primary storage as the hosts' agents read it for HA.
type HAView struct {
	s     *Scheduler
	hosts map[string]*Host
}

// NewHAView reads the heartbeats and disk activity of hosts (the map may grow).
func NewHAView(s *Scheduler, hosts map[string]*Host) *HAView { return &HAView{s: s, hosts: hosts} }

// HeartbeatAlive: the host's last heartbeat is younger than HeartbeatWindow.
func (v *HAView) HeartbeatAlive(host string) bool {
	h, ok := v.hosts[host]
	if !ok {
		return false
	}
	return h.beatStopped.IsZero() || v.s.Now().Sub(h.beatStopped) < HeartbeatWindow
}

// DiskActivity: a domain of vmName runs on host, so its volumes are being written.
func (v *HAView) DiskActivity(host, vmName string) bool {
	h, ok := v.hosts[host]
	if !ok || h.off {
		return false
	}
	d, ok := h.domains[vmName]
	return ok && d.running
}

// AnswersPing: a guest that holds ip runs (booted) on a powered host. Guests answer ICMP; the guest
// networks reach every host.
func (v *HAView) AnswersPing(ip string) bool {
	for _, h := range v.hosts {
		if h.off {
			continue
		}
		for _, d := range h.domains {
			if d.running && d.ready && slices.Contains(d.spec.IPs, ip) {
				return true
			}
		}
	}
	return false
}

var (
	_ impl.HAStorage    = (*HAView)(nil)
	_ impl.GuestNetwork = (*HAView)(nil)
)
