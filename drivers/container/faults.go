package container

// Fault primitives. Each one that has an end registers its heal, so HealAll (called by Close, also
// after a failure or Ctrl-C) leaves no host partitioned, paused or stopped.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/moby/moby/client"
)

func (c *Cluster) host(h string) (*Host, error) {
	hst, ok := c.hosts[h]
	if !ok || hst.Agent == nil {
		return nil, fmt.Errorf("no host %q", h)
	}
	return hst, nil
}

func (c *Cluster) setHeal(key string, heal func(context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if heal == nil {
		delete(c.faults, key)
	} else {
		c.faults[key] = heal
	}
}

// Disconnect takes a host's agent container off the run's network (a partition: its connection to
// the server stops carrying anything; nothing closes it).
func (c *Cluster) Disconnect(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	if _, err := c.cli.NetworkDisconnect(ctx, c.net.ID, client.NetworkDisconnectOptions{Container: hst.Agent.GetContainerID(), Force: true}); err != nil {
		return err
	}
	c.setHeal("partition/"+h, func(ctx context.Context) error { return c.Connect(ctx, h) })
	return nil
}

// Connect puts a host's agent container back on the run's network (with its alias).
func (c *Cluster) Connect(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	_, err = c.cli.NetworkConnect(ctx, c.net.ID, client.NetworkConnectOptions{Container: hst.Agent.GetContainerID()})
	if err == nil {
		c.setHeal("partition/"+h, nil)
	}
	return err
}

// Pause freezes a host's agent container (cgroup freezer): its kernel still ACKs TCP, the agent
// sends nothing.
func (c *Cluster) Pause(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	if _, err := c.cli.ContainerPause(ctx, hst.Agent.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return err
	}
	c.setHeal("pause/"+h, func(ctx context.Context) error { return c.Unpause(ctx, h) })
	return nil
}

// Unpause thaws it.
func (c *Cluster) Unpause(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	_, err = c.cli.ContainerUnpause(ctx, hst.Agent.GetContainerID(), client.ContainerUnpauseOptions{})
	if err == nil {
		c.setHeal("pause/"+h, nil)
	}
	return err
}

// StopAgent stops a host's agent container: SIGTERM (the agent sends a ShutdownCommand and exits),
// SIGKILL after 10 s. The host's domains keep running in its hypervisor container.
func (c *Cluster) StopAgent(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	timeout := 10
	if _, err := c.cli.ContainerStop(ctx, hst.Agent.GetContainerID(), client.ContainerStopOptions{Timeout: &timeout}); err != nil {
		return err
	}
	c.setHeal("stopped/"+h, func(ctx context.Context) error { return c.StartAgent(ctx, h) })
	return nil
}

// KillAgent is kill -9 of a host's agent container: no ShutdownCommand, the socket closes.
func (c *Cluster) KillAgent(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	if _, err := c.cli.ContainerKill(ctx, hst.Agent.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return err
	}
	c.setHeal("stopped/"+h, func(ctx context.Context) error { return c.StartAgent(ctx, h) })
	return nil
}

// StartAgent starts a stopped or killed agent container again.
func (c *Cluster) StartAgent(ctx context.Context, h string) error {
	hst, err := c.host(h)
	if err != nil {
		return err
	}
	if _, err := c.cli.ContainerStart(ctx, hst.Agent.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return err
	}
	c.setHeal("stopped/"+h, nil)
	return nil
}

// StopServer kills the management server's process (SIGKILL to its container): its threads die
// wherever they are, as the simulator's ms-restart kills them at their park points. Its database is
// the state file in the container's writable layer, which survives until StartServer starts the same
// container again (Close starts it too, and then removes it).
func (c *Cluster) StopServer(ctx context.Context) error {
	id := c.ms.GetContainerID()
	if _, err := c.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return err
	}
	c.setHeal("ms", c.StartServer)
	return nil
}

// StartServer starts the management server's container again (same --id and --state: the new
// incarnation loads every committed record and cleans up its predecessor's jobs) and waits up to
// 30 s for its control endpoint, whose published port changes.
func (c *Cluster) StartServer(ctx context.Context) error {
	if _, err := c.cli.ContainerStart(ctx, c.ms.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return err
	}
	c.setHeal("ms", nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.refreshControl(ctx); err == nil {
			if err = c.Control(ctx, "listHosts", nil, nil); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("management server's control endpoint did not come back within 30 s")
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// GuestShutdown makes a domain's guest on h power itself off (its hypervisor's fault).
func (c *Cluster) GuestShutdown(ctx context.Context, h, dom string) error {
	hst, ok := c.hosts[h]
	if !ok {
		return fmt.Errorf("no host %q", h)
	}
	if hst.lv != nil { // a real guest: "poweroff" on its serial port
		return hst.lv.GuestPoweroff(dom)
	}
	return control.Do(ctx, hst.truth+"/guestShutdown?"+url.Values{"name": {dom}}.Encode(), "POST", c.token, nil)
}

// SetRouterBoot makes router guests created from now on, on every host, take d to boot (0: the
// hypervisor's default, 1 s; on real domains the agent's --router-boot). An agent container that
// restarts afterwards starts again with its --router-boot.
func (c *Cluster) SetRouterBoot(ctx context.Context, d time.Duration) error {
	for _, h := range c.o.Hosts {
		hst, ok := c.hosts[h]
		if !ok {
			return fmt.Errorf("no host %q", h)
		}
		base := hst.truth
		if hst.lv != nil { // real domains: the libvirt agent's fault hook (its port moves on restart)
			var err error
			if base, err = endpoint(ctx, hst.Agent, faultsPort); err != nil {
				return fmt.Errorf("host %s: %w", h, err)
			}
		}
		if err := control.Do(ctx, base+"/routerBoot?"+url.Values{"d": {d.String()}}.Encode(), "POST", c.token, nil); err != nil {
			return fmt.Errorf("host %s: %w", h, err)
		}
	}
	return nil
}

// Timed applies a fault, lets it last d and heals it — also when ctx ends first (the heal then runs
// on a context of its own).
func (c *Cluster) Timed(ctx context.Context, d time.Duration, apply, heal func(context.Context) error) error {
	if err := apply(ctx); err != nil {
		return err
	}
	sleepCtx(ctx, d)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return heal(hctx)
}

// RollingRestart restarts every agent one after another: stop, down for down, start, then gap
// before the next host. hook, if set, is called with each host and "stop"/"start" after the action.
func (c *Cluster) RollingRestart(ctx context.Context, down, gap time.Duration, hook func(h, what string)) error {
	for i, h := range c.o.Hosts {
		if i > 0 && !sleepCtx(ctx, gap) {
			break
		}
		if err := c.Timed(ctx, down, func(ctx context.Context) error {
			err := c.StopAgent(ctx, h)
			if err == nil && hook != nil {
				hook(h, "stop")
			}
			return err
		}, func(ctx context.Context) error {
			err := c.StartAgent(ctx, h)
			if err == nil && hook != nil {
				hook(h, "start")
			}
			return err
		}); err != nil {
			return fmt.Errorf("rolling restart at %s: %w", h, err)
		}
	}
	return ctx.Err()
}

// HealAll undoes every fault still in force: reconnects, unpauses, starts stopped agents and the
// server.
func (c *Cluster) HealAll(ctx context.Context) error {
	c.mu.Lock()
	heals := make(map[string]func(context.Context) error, len(c.faults))
	for k, f := range c.faults {
		heals[k] = f
	}
	c.mu.Unlock()
	var errs []error
	// unpause before anything else: a paused container can be neither connected nor stopped cleanly
	for _, prefix := range []string{"pause/", "partition/", "stopped/", "ms"} {
		for k, f := range heals {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
				if err := f(ctx); err != nil {
					errs = append(errs, fmt.Errorf("healing %s: %w", k, err))
				} else {
					c.logf("healed %s", k)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
