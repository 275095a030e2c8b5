package process

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

// LibvirtOptions are an agent's settings for its libvirt domains.
type LibvirtOptions struct {
	Run, RunDir, GuestDir, VirtType string // as libvirt.Options'
	// RouterBoot is the router boot in force, read as each router starts (the slow-router-boot
	// fault's hook changes it).
	RouterBoot *atomic.Int64
}

// NewLibvirtHost is host hostID's hypervisor on the libvirtd at uri ("": libvirt.DefaultURI); its
// domains are the libvirt driver's (named csc-<run>-<host>-…, labelled in their metadata), so the
// libvirt world, the container world's truth and csconform cleanup all see them.
func NewLibvirtHost(env *live.Env, hostID, uri string, o LibvirtOptions) (*LibvirtHost, error) {
	if uri == "" {
		uri = libvirt.DefaultURI
	}
	h, err := libvirt.New(uri, hostID, libvirt.Options{Run: o.Run, BaseDir: o.RunDir, GuestDir: o.GuestDir, VirtType: o.VirtType,
		BootDelay: func(spec impl.DomainSpec) time.Duration {
			if spec.Type == "DomainRouter" {
				return time.Duration(o.RouterBoot.Load())
			}
			return 0
		}})
	if err != nil {
		return nil, err
	}
	return &LibvirtHost{Host: h, env: env, uri: uri}, nil
}

// LibvirtHost is an agent's hypervisor of real QEMU domains (csconform agent --hypervisor libvirt):
// the libvirt driver's host, whose domains outlive the agent. It queues libvirt's lifecycle events, which the driver delivers on its own
// goroutine, and hands them to the agent one at a time on a task of the agent's, so a slow agent
// never stalls the event stream.
type LibvirtHost struct {
	*libvirt.Host
	env *live.Env
	uri string
}

func (h *LibvirtHost) Subscribe(fn func(impl.LifecycleEvent)) {
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
func (h *LibvirtHost) Describe() string {
	return fmt.Sprintf("real domains on %s, run %s, %s guests, files in %s", h.uri, h.Run, h.VirtType(), h.RunDir())
}
