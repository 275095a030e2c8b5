package harness

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/csconform/csconform/impl"
)

// WorldDef is one world a scenario runs in, as --driver names it: what it is, what it can do, and how
// a scenario runs there. cmd (repro, explore), conformance and the docs pick worlds here by name.
type WorldDef struct {
	Name string
	// Doc says in a line what the world is, for --driver's help.
	Doc  string
	Caps Capabilities
	// Run runs a scenario there; nil for the external world, which needs an API and hosts
	// (RunScenarioExternal with ExternalOptions, csconform repro --api).
	Run func(sc *Scenario, profile string, defects impl.Switches, seed uint64, o RunOptions) (*Result, error)
}

// RunOptions are what a run may need of its caller, each world reading its own.
type RunOptions struct {
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
}

// Worlds are the worlds, in the order the docs give them.
var Worlds = []WorldDef{
	{Name: "sim", Doc: "the deterministic simulator, the default; a seed replays byte for byte",
		Caps: SimCapabilities, Run: func(sc *Scenario, profile string, defects impl.Switches, seed uint64, o RunOptions) (*Result, error) {
			return RunScenarioLimited(sc, profile, defects, seed, o.Limits)
		}},
	{Name: "live", Doc: "the reference in real time at 10x the wall clock, its agents over TCP, hosts simulated",
		Caps: LiveCapabilities, Run: func(sc *Scenario, profile string, defects impl.Switches, seed uint64, o RunOptions) (*Result, error) {
			return RunScenarioLive(sc, profile, defects, seed, LiveOptions{Speed: o.Speed})
		}},
	{Name: "libvirt", Doc: "real QEMU domains on libvirtd in real time, after ci/setup-libvirt.sh and ci/build-guest.sh; Ctrl-C cleans up",
		Caps: LibvirtCapabilities, Run: func(sc *Scenario, profile string, defects impl.Switches, seed uint64, o RunOptions) (*Result, error) {
			r, err := RunScenarioLibvirt(sc, profile, defects, seed, LibvirtOptions{URI: o.URI, Ctx: o.Ctx, Log: o.Log})
			if err != nil && o.Ctx != nil && o.Ctx.Err() != nil {
				return nil, fmt.Errorf("interrupted (%v); the run's domains and files were removed", err)
			}
			return r, err
		}},
	{Name: "container", Doc: "server and hosts in Docker containers built FROM scratch; Ctrl-C heals the faults and removes what the run made",
		Caps: ContainerCapabilities, Run: func(sc *Scenario, profile string, defects impl.Switches, seed uint64, o RunOptions) (*Result, error) {
			// an interrupted run says so itself, and what it removed
			return RunScenarioContainer(sc, profile, defects, seed, ContainerOptions{Ctx: o.Ctx, Log: o.Log, Domains: o.Domains})
		}},
	{Name: "external", Doc: "a real CloudStack through its API, csconform repro --api; faults through csconform inject",
		Caps: ExternalCapabilities},
}

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
