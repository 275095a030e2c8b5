package main

// csconform agent --hypervisor libvirt[:URI]: the agent drives real QEMU domains on libvirtd, as
// cloudstack-agent does. The domains are the libvirt driver's (named csc-<run>-<host>-…, labelled
// in their metadata), so the libvirt world, the container world's truth and csconform cleanup all
// see them; the agent process only talks to libvirtd, so its domains outlive it.

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

func newLibvirtHypervisor(env *live.Env, hostID, uri string, o hvFlags) (impl.Hypervisor, error) {
	if uri == "" {
		uri = libvirt.DefaultURI
	}
	routerBoot := o.routerBootNow
	if routerBoot == nil {
		routerBoot = new(atomic.Int64)
		routerBoot.Store(int64(o.routerBoot))
	}
	h, err := libvirt.New(uri, hostID, libvirt.Options{Run: o.run, BaseDir: o.runDir, GuestDir: o.guestDir, VirtType: o.virtType,
		BootDelay: func(spec impl.DomainSpec) time.Duration {
			if spec.Type == "DomainRouter" {
				return time.Duration(routerBoot.Load())
			}
			return 0
		}})
	if err != nil {
		return nil, err
	}
	return &libvirtAgentHost{Host: h, env: env, uri: uri}, nil
}

// libvirtAgentHost queues libvirt's lifecycle events, which the driver delivers on its own
// goroutine, and hands them to the agent one at a time on a task of the agent's, so a slow agent
// never stalls the event stream.
type libvirtAgentHost struct {
	*libvirt.Host
	env *live.Env
	uri string
}

func (h *libvirtAgentHost) Subscribe(fn func(impl.LifecycleEvent)) {
	ch := make(chan impl.LifecycleEvent, 1024)
	h.Host.Subscribe(func(ev impl.LifecycleEvent) {
		select {
		case ch <- ev:
		default: // hopelessly behind: libvirt drops events for slow clients too
		}
	})
	h.env.Go("agent/libvirt-events", func() {
		for {
			select {
			case ev := <-ch:
				fn(ev)
			case <-h.env.Done():
				return
			}
		}
	})
}

// Describe is the agent's start line's account of where its domains run.
func (h *libvirtAgentHost) Describe() string {
	return fmt.Sprintf("real domains on %s, run %s, %s guests, files in %s", h.uri, h.Run, h.VirtType(), h.RunDir())
}
