package harness

import (
	"fmt"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/model/history"
)

// The KVM agent's self-fence (issue 34 item 7). KVMHAMonitor, a thread of the agent on a host with an
// NFS primary storage pool, writes the host's heartbeat file every heartbeat.update.frequency; a
// write that fails is tried again heartbeat.update.max.tries times, heartbeat.update.retry.sleep
// apart, and when the last try fails too and reboot.host.and.alert.management.on.heartbeat.timeout is
// true (the agent.properties default) it runs kvmheartbeat.sh -c, which syncs, sleeps 5 s and
// reboots the host (echo b > /proc/sysrq-trigger): its domains die. Read: KVMHAMonitor.runHeartBeat
// and executePoolHeartBeatCommand (apache/cloudstack@0351eca9 and a later upstream copy,
// plugins/hypervisors/kvm/src/main/java/com/cloud/hypervisor/kvm/resource/KVMHAMonitor.java),
// AgentProperties (the setting, default true).
//
// The monitor is modelled by the simulated world, not by impl.Agent: it runs only while a host's
// heartbeat writes fail (the heartbeat-fail fault), so a run without that fault keeps its history.
// With the setting off the monitor's failed writes change nothing and are not logged. The reboot is
// a host power cycle (the host-power-off fault's own path, recorded as such, so that the checkers
// know the domains died), and the host takes SelfFenceBootTime to boot; a fault on the storage path
// outlives the reboot, so the new agent's monitor fences again while it lasts.

// KVMHAMonitor's timing (KVMHABase; the defaults of the frequency, the tries and the sleep are
// recalled, not read) and kvmheartbeat.sh -c's sleep before the reboot.
const (
	kvmHeartbeatUpdateFreq       = sim.HeartbeatWindow
	kvmHeartbeatUpdateMaxTries   = 5
	kvmHeartbeatUpdateRetrySleep = 10 * time.Second
	kvmHeartbeatRebootSleep      = 5 * time.Second
	// SelfFenceBootTime is how long a self-fenced host takes to come back (the simulator's choice).
	SelfFenceBootTime = 2 * time.Minute
)

// SelfFenceKey is the agent property that turns the self-fence on.
const SelfFenceKey = "reboot.host.and.alert.management.on.heartbeat.timeout"

// selfFenceHost is the simulator's view of a host the monitor needs.
type selfFenceHost interface {
	heartbeatFailing(h string) bool
}

func (w *simWorld) heartbeatFailing(h string) bool { return w.hosts[h].HeartbeatFailing() }

// startKVMHAMonitor runs host h's monitor while its heartbeat writes fail (one at a time per host).
func (c *Cluster) startKVMHAMonitor(h string) {
	sw, ok := c.w.(selfFenceHost)
	if !ok || !c.Config.Bool(SelfFenceKey) || c.monitoring[h] {
		return
	}
	if c.monitoring == nil {
		c.monitoring = map[string]bool{}
	}
	c.monitoring[h] = true
	// not under "agent/<h>/": a power-off kills those tasks, and this one reboots the host
	c.Go("kvmha/"+h, func() {
		defer delete(c.monitoring, h)
		c.kvmHAMonitor(h, sw)
	})
}

// kvmHAMonitor is KVMHAMonitor.run over the agents the host runs in turn: each agent's monitor writes
// at its start and every kvmHeartbeatUpdateFreq after it; a run of failed tries that outlives its
// agent (a restart, the host off) starts over with the next one.
func (c *Cluster) kvmHAMonitor(h string, sw selfFenceHost) {
	for sw.heartbeatFailing(h) {
		c.procMu.Lock()
		a, started := c.agents[h], c.agentStarted[h]
		c.procMu.Unlock()
		since := c.Now().Sub(started)
		next := started.Add((since + kvmHeartbeatUpdateFreq - 1) / kvmHeartbeatUpdateFreq * kvmHeartbeatUpdateFreq)
		c.Sleep(next.Sub(c.Now()))
		alive := func() bool { return c.agent(h) == a && !a.Dead() && !c.poweredOff(h) }
		if !alive() {
			if c.agent(h) == a { // no new agent yet: look again at the next beat
				c.Sleep(kvmHeartbeatUpdateFreq)
			}
			continue
		}
		failed := true
		for try := 1; try <= kvmHeartbeatUpdateMaxTries; try++ {
			if !sw.heartbeatFailing(h) {
				failed = false
				break
			}
			c.agentLog(h, "WARN", fmt.Sprintf("Write heartbeat for pool [primary] failed: heartbeat write failed; try: %d of %d.", try, kvmHeartbeatUpdateMaxTries))
			c.Sleep(kvmHeartbeatUpdateRetrySleep)
			if !alive() {
				break
			}
		}
		if !failed || !alive() {
			continue
		}
		c.agentLog(h, "WARN", "Write heartbeat for pool [primary] failed: heartbeat write failed; stopping cloudstack-agent.")
		c.Sleep(kvmHeartbeatRebootSleep) // kvmheartbeat.sh -c: sync &, sleep 5
		if !alive() {
			continue
		}
		c.selfFence(h)
	}
}

// selfFence reboots the host: the power goes (domains, agent), and it boots SelfFenceBootTime later.
func (c *Cluster) selfFence(h string) {
	id := c.Begin("host-power-off", true, fmt.Sprintf("self-fence: kvmheartbeat.sh -c rebooted %s after %d failed heartbeat writes (%s)", h, kvmHeartbeatUpdateMaxTries, SelfFenceKey), "host:"+h)
	_ = c.HostPower(h, false)
	c.Sleep(SelfFenceBootTime)
	_ = c.HostPower(h, true)
	c.End(id, "host booted")
}

// agentLog writes a line of host h's agent log.
func (c *Cluster) agentLog(h, level, detail string) {
	c.Rec.Emit(history.Event{Time: c.Now(), Actor: "agent/" + h + "/KVMHAMonitor", Kind: history.Log, Level: level,
		Object: "host:" + h, Detail: detail})
}
