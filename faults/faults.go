// Package faults is the catalogue of injected faults: what each does to a world, how long it lasts,
// and whether it may legitimately make a client operation fail. A fault acts only through the World a
// driver provides, so the same fault runs on the simulator and on real hosts.
package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// World is what a driver offers faults. Every call is made from a task of the world (in the simulator,
// a scheduled task), so Sleep is the world's time.
type World interface {
	Sleep(d time.Duration)
	// AgentStop stops a host's agent: graceful (a ShutdownCommand first) or killed. Its domains keep running.
	AgentStop(host string, graceful bool) error
	AgentStart(host string) error
	// CutLink holds (on) or releases (off) every message between a host's agent and the server.
	CutLink(host string, on bool) error
	// CrashDomain kills a domain's QEMU (detail "FAILED") or panics the guest ("CRASHED").
	CrashDomain(vm, detail string) error
	// GuestShutdown makes a guest power itself off.
	GuestShutdown(vm string) error
	// DelayNextOutOfBand makes the next out-of-band report of a host reach the server d late.
	DelayNextOutOfBand(host string, d time.Duration) error
	// SetRouterBoot sets how long router guests take to say "ready" (0 restores the default).
	SetRouterBoot(d time.Duration) error
	// HostPower powers a host off (its domains and agent gone, its storage heartbeat stopped) or on
	// (booted empty, its agent started).
	HostPower(host string, on bool) error
	// RemoveHost is an operator's forced deleteHost; the host's agent is stopped after.
	RemoveHost(host string) error
	// Heartbeat stops (off) or resumes (on) a live host's storage heartbeat writes.
	Heartbeat(host string, on bool) error
	// FailStarts makes a host's hypervisor fail (on) or create again (off) every domain it is asked
	// to start; its agent and running domains go on.
	FailStarts(host string, on bool) error
	ServerStop() error
	ServerStart() error
	// PeerStop and PeerStart stop and start a peer management server (ms2 …) on the same database.
	PeerStop(server string) error
	PeerStart(server string) error
	// Backdate moves a network's creation time back by d (UPDATE networks SET created = created - d).
	Backdate(network string, d time.Duration) error
	// Begin and End record the fault in the history.
	Begin(kind string, disruptive bool, detail string, targets ...string) int
	End(id int, detail string)
}

// Spec is one fault as a scenario or a generator states it.
type Spec struct {
	Kind     string        `yaml:"fault" json:"fault"`
	Host     string        `yaml:"host,omitempty" json:"host,omitempty"`
	VM       string        `yaml:"vm,omitempty" json:"vm,omitempty"`
	Network  string        `yaml:"network,omitempty" json:"network,omitempty"`
	Duration time.Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	Detail   string        `yaml:"detail,omitempty" json:"detail,omitempty"`
	Server   string        `yaml:"server,omitempty" json:"server,omitempty"`
}

// Kind describes a fault.
type Kind struct {
	Name       string
	Doc        string
	Disruptive bool // may legitimately make a concurrent operation on its targets fail
	Needs      []string
	run        func(w World, s Spec) error
}

// Kinds is the catalogue.
var Kinds = []Kind{
	{"agent-restart", "graceful restart of the host's agent (ShutdownCommand, one second, socket closed: the host goes Disconnected, no investigation; back after duration; default 10s); domains keep running",
		true, []string{"host"}, func(w World, s Spec) error {
			d := dur(s.Duration, 10*time.Second)
			return timeBoxed(w, "agent-restart", fmt.Sprintf("agent restart, down %s", d), d,
				func() error { return w.AgentStop(s.Host, true) }, func() error { return w.AgentStart(s.Host) }, "agent started", "host:"+s.Host)
		}},
	{"agent-kill", "kill -9 of the host's agent, restarted after duration (default 10s): the socket just closes, the server investigates (Alert); domains keep running",
		true, []string{"host"}, func(w World, s Spec) error {
			return timeBoxed(w, "agent-kill", "agent killed", dur(s.Duration, 10*time.Second),
				func() error { return w.AgentStop(s.Host, false) }, func() error { return w.AgentStart(s.Host) }, "agent started", "host:"+s.Host)
		}},
	{"disconnect", "cut the agent link of a host for duration (messages held, then delivered, as TCP would)",
		true, []string{"host", "duration"}, func(w World, s Spec) error {
			return timeBoxed(w, "disconnect", "link cut for "+s.Duration.String(), s.Duration,
				func() error { return w.CutLink(s.Host, true) }, func() error { return w.CutLink(s.Host, false) }, "link healed", "host:"+s.Host)
		}},
	{"crash", "a domain's QEMU is killed (STOPPED/FAILED): the agent sends an out-of-band ping",
		true, []string{"vm"}, func(w World, s Spec) error {
			return instant(w, "crash", true, "crash of "+s.VM, func() error { return w.CrashDomain(s.VM, or(s.Detail, "FAILED")) }, "vm:"+s.VM)
		}},
	{"guest-shutdown", "the guest powers itself off (SHUTDOWN, then STOPPED/SHUTDOWN): out-of-band ping",
		true, []string{"vm"}, func(w World, s Spec) error {
			return instant(w, "guest-shutdown", true, "self-shutdown of "+s.VM, func() error { return w.GuestShutdown(s.VM) }, "vm:"+s.VM)
		}},
	{"stale-report", "the next out-of-band report of a host is processed duration after it was collected",
		false, []string{"host", "duration"}, func(w World, s Spec) error {
			return instant(w, "stale-report", false, "next out-of-band report delayed by "+s.Duration.String(),
				func() error { return w.DelayNextOutOfBand(s.Host, s.Duration) }, "host:"+s.Host)
		}},
	{"slow-router-boot", "router guests take duration to boot (0 = default 36–41 s)",
		false, []string{"duration"}, func(w World, s Spec) error {
			return instant(w, "slow-router-boot", false, "router boot "+s.Duration.String(), func() error { return w.SetRouterBoot(s.Duration) })
		}},
	{"host-power-off", "the host loses power for duration (default 30m): domains gone, agent gone without a word, storage heartbeat stopped (investigators answer Down); then it boots empty",
		true, []string{"host"}, func(w World, s Spec) error {
			d := dur(s.Duration, 30*time.Minute)
			return timeBoxed(w, "host-power-off", "host powered off for "+d.String(), d,
				func() error { return w.HostPower(s.Host, false) }, func() error { return w.HostPower(s.Host, true) }, "host powered on", "host:"+s.Host)
		}},
	{"host-remove", "an operator's forced deleteHost: HA-disabled VMs force-stopped, HA-enabled ones restarted by HA, host Removed, its agent stopped (domains left as they are)",
		true, []string{"host"}, func(w World, s Spec) error {
			return instant(w, "host-remove", true, "host removed by an operator", func() error { return w.RemoveHost(s.Host) }, "host:"+s.Host)
		}},
	{"host-unreachable", "the host is Up but the management server cannot reach it for duration (default 5m, past the ping timeout): an inconclusive investigation (Disconnected: its heartbeat still beats)",
		true, []string{"host"}, func(w World, s Spec) error {
			d := dur(s.Duration, 5*time.Minute)
			return timeBoxed(w, "host-unreachable", "host unreachable for "+d.String(), d,
				func() error { return w.CutLink(s.Host, true) }, func() error { return w.CutLink(s.Host, false) }, "host reachable", "host:"+s.Host)
		}},
	{"heartbeat-fail", "a live host's storage heartbeat writes fail for duration (default 10m): its domains and agent run on, neighbours see its heart stopped (the investigator wrongly says Down)",
		true, []string{"host"}, func(w World, s Spec) error {
			d := dur(s.Duration, 10*time.Minute)
			return timeBoxed(w, "heartbeat-fail", "storage heartbeat failing for "+d.String(), d,
				func() error { return w.Heartbeat(s.Host, false) }, func() error { return w.Heartbeat(s.Host, true) }, "heartbeat written again", "host:"+s.Host)
		}},
	{"start-fails", "the host's hypervisor fails to create any domain for duration (default 5m), as libvirt does when QEMU cannot start one (no memory left, an image it cannot open): every StartCommand answers Result=false; the agent and the running domains go on",
		true, []string{"host"}, func(w World, s Spec) error {
			d := dur(s.Duration, 5*time.Minute)
			return timeBoxed(w, "start-fails", "domain starts fail for "+d.String(), d,
				func() error { return w.FailStarts(s.Host, true) }, func() error { return w.FailStarts(s.Host, false) }, "domain starts succeed again", "host:"+s.Host)
		}},
	{"ms-restart", "the management server process dies and comes back after duration (default 30s)",
		true, nil, func(w World, s Spec) error {
			return timeBoxed(w, "ms-restart", "management server restart", dur(s.Duration, 30*time.Second),
				w.ServerStop, w.ServerStart, "management server started", "ms")
		}},
	{"peer-stop", "a peer management server (server: ms2 …) dies and comes back after duration (default 10m: past the 150 s cluster heartbeat threshold, so the others see it leave and take its hosts)",
		true, []string{"server"}, func(w World, s Spec) error {
			d := dur(s.Duration, 10*time.Minute)
			return timeBoxed(w, "peer-stop", "management server "+s.Server+" stopped for "+d.String(), d,
				func() error { return w.PeerStop(s.Server) }, func() error { return w.PeerStart(s.Server) }, "management server "+s.Server+" started", "ms")
		}},
	{"backdate", "move a network's creation time back by duration (the seed 000 A/B's UPDATE networks SET created = …)",
		false, []string{"network", "duration"}, func(w World, s Spec) error {
			return instant(w, "backdate", false, "created -= "+s.Duration.String(), func() error { return w.Backdate(s.Network, s.Duration) }, "network:"+s.Network)
		}},
}

// timeBoxed records a disruptive fault, applies it, lets it last d and heals it.
func timeBoxed(w World, kind, detail string, d time.Duration, apply, heal func() error, healed string, targets ...string) error {
	id := w.Begin(kind, true, detail, targets...)
	if err := apply(); err != nil {
		w.End(id, "not applied: "+err.Error()) // a fault left open would explain failures forever
		return err
	}
	w.Sleep(d)
	err := heal()
	w.End(id, healed)
	return err
}

// instant records a fault that acts once.
func instant(w World, kind string, disruptive bool, detail string, act func() error, targets ...string) error {
	id := w.Begin(kind, disruptive, detail, targets...)
	err := act()
	w.End(id, "")
	return err
}

func dur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Lookup finds a fault kind.
func Lookup(name string) (Kind, error) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, nil
		}
	}
	var names []string
	for _, k := range Kinds {
		names = append(names, k.Name)
	}
	sort.Strings(names)
	return Kind{}, fmt.Errorf("unknown fault %q (known: %s)", name, strings.Join(names, ", "))
}

// Validate checks a spec names a known fault with what it needs.
func Validate(s Spec) error {
	k, err := Lookup(s.Kind)
	if err != nil {
		return err
	}
	for _, n := range k.Needs {
		switch {
		case n == "host" && s.Host == "",
			n == "vm" && s.VM == "",
			n == "network" && s.Network == "",
			n == "duration" && s.Duration <= 0,
			n == "server" && s.Server == "":
			return fmt.Errorf("fault %s needs %s", s.Kind, n)
		}
	}
	return nil
}

// Run applies a fault to a world and returns when it has healed.
func Run(w World, s Spec) error {
	if err := Validate(s); err != nil {
		return err
	}
	k, _ := Lookup(s.Kind)
	return k.run(w, s)
}
