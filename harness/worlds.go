package harness

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/csconform/csconform/impl"
)

// WorldDef is one world a scenario runs in, as --driver names it: what it is, what it can do, and how
// it is opened for a run. cmd (repro, explore), conformance and the docs pick worlds here by name.
type WorldDef struct {
	Name string
	// Doc says in a line what the world is, for --driver's help.
	Doc  string
	Caps Capabilities
	// Open brings the world up for one run of sc (the reference with defects, where the world runs
	// it), ready for Run to drive.
	Open func(sc *Scenario, defects impl.Switches, o RunOptions) (World, error)
	// Preflight, if set, is what Run checks before opening the world instead of Caps.Check: the
	// capabilities and what else the run needs (the external world's API and host access).
	Preflight func(sc *Scenario, o RunOptions) error
}

// RunOptions are what a run may need of its caller, each world reading its own.
type RunOptions struct {
	// Profile is the profile the run is judged against (and, in a world that runs the reference,
	// the switches it runs with unless Defects says them); Seed the simulator's seed.
	Profile string
	Defects impl.Switches
	Seed    uint64
	// Ctx ends a run early (Ctrl-C): the simulator between two steps (through Limits), a real world
	// after healing its faults and removing what it made.
	Ctx context.Context
	// Log receives a real world's progress lines (nil: none).
	Log io.Writer
	// Limits bound the simulator (steps, simulated time, strategy).
	Limits Limits
	// URI is libvirtd's for the libvirt world (default qemu:///system).
	URI string
	// Domains is the container world's domains: auto, libvirt or simulated.
	Domains string
	// Speed is the live world's clock, world seconds per wall second (default 10).
	Speed float64
	// The worlds' own options: the live world's (Speed above where it leaves it unset), the libvirt
	// world's (URI, Ctx and Log above where it leaves them unset), the container world's (Ctx, Log and Domains above where it leaves them unset), the external
	// world's (an API and its hosts), which it needs.
	Live      *LiveOptions
	Libvirt   *LibvirtOptions
	Container *ContainerOptions
	External  *ExternalOptions
}

// The worlds.
var (
	Simulator = WorldDef{Name: "sim", Doc: "the deterministic simulator, the default; a seed replays byte for byte",
		Caps: SimCapabilities, Open: func(sc *Scenario, defects impl.Switches, o RunOptions) (World, error) {
			return openCluster(sc, defects, o.Seed, o.Limits, nil, SimCapabilities, "", NewSimCluster)
		}}
	Live = WorldDef{Name: "live", Doc: "the reference in real time at 10x the wall clock, its agents over TCP, hosts simulated",
		Caps: LiveCapabilities, Open: func(sc *Scenario, defects impl.Switches, o RunOptions) (World, error) {
			return openCluster(sc, defects, o.Seed, Limits{}, nil, LiveCapabilities, "",
				func(co Options) (*Cluster, error) {
					lo := LiveOptions{Speed: o.Speed}
					if o.Live != nil {
						lo = *o.Live
						lo.Speed = cmp.Or(lo.Speed, o.Speed)
					}
					return NewLiveCluster(co, lo)
				})
		}}
	Libvirt = WorldDef{Name: "libvirt", Doc: "real QEMU domains on libvirtd in real time, after ci/setup-libvirt.sh and ci/build-guest.sh; Ctrl-C cleans up",
		Caps: LibvirtCapabilities, Open: func(sc *Scenario, defects impl.Switches, o RunOptions) (World, error) {
			var lo LibvirtOptions
			if o.Libvirt != nil {
				lo = *o.Libvirt
			}
			lo.URI, lo.Ctx, lo.Log = cmp.Or(lo.URI, o.URI), cmp.Or(lo.Ctx, o.Ctx), cmp.Or(lo.Log, o.Log)
			return openCluster(sc, defects, o.Seed, Limits{}, lo.Ctx, LibvirtCapabilities,
				"the run's domains and files were removed",
				func(co Options) (*Cluster, error) { return NewLibvirtCluster(co, lo) })
		}}
	Containers = WorldDef{Name: "container", Doc: "server and hosts in Docker containers built FROM scratch; Ctrl-C heals the faults and removes what the run made",
		Caps: ContainerCapabilities, Open: openContainers}
	External = WorldDef{Name: "external", Doc: "a real CloudStack through its API, csconform repro --api; faults through csconform inject",
		Caps: ExternalCapabilities, Open: openExternal, Preflight: preflightExternal}
)

// Worlds are the worlds, in the order the docs give them.
var Worlds = []WorldDef{Simulator, Live, Libvirt, Containers, External}

// WorldNames lists the worlds by name, in the order of Worlds.
var WorldNames = func() []string {
	var n []string
	for _, w := range Worlds {
		n = append(n, w.Name)
	}
	return n
}()

// WorldNamed is a world by name; the error lists the names.
func WorldNamed(name string) (WorldDef, error) {
	for _, w := range Worlds {
		if w.Name == name {
			return w, nil
		}
	}
	return WorldDef{}, fmt.Errorf("unknown world %q (one of %s)", name, strings.Join(WorldNames, ", "))
}

// CapabilitiesOf is a world's declaration by name.
func CapabilitiesOf(name string) (Capabilities, error) {
	w, err := WorldNamed(name)
	return w.Caps, err
}
