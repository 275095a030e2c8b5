package main

// csconform agent --hypervisor libvirt[:URI]: the agent drives real QEMU domains on libvirtd, as
// cloudstack-agent does. The domains are the libvirt driver's (named csc-<run>-<host>-…, labelled
// in their metadata), so the libvirt world, the container world's truth and csconform cleanup all
// see them; the agent process only talks to libvirtd, so its domains outlive it.

import (
	"sync/atomic"

	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/drivers/live/process"
	"github.com/csconform/csconform/impl"
)

func newLibvirtHypervisor(env *live.Env, hostID, uri string, o hvFlags) (impl.Hypervisor, error) {
	routerBoot := o.routerBootNow
	if routerBoot == nil {
		routerBoot = new(atomic.Int64)
		routerBoot.Store(int64(o.routerBoot))
	}
	h, err := process.NewLibvirtHost(env, hostID, uri, process.LibvirtOptions{Run: o.run, RunDir: o.runDir, GuestDir: o.guestDir, VirtType: o.virtType, RouterBoot: routerBoot})
	if err != nil {
		return nil, err
	}
	return h, nil
}
