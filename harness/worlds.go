package harness

import (
	"cmp"
	"context"
	"fmt"
	"io"

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
	// RunID names what a real world creates for the run (default: NewRunID()).
	RunID string
	// Own is a world's own options, as its package defines them (*LiveOptions, *LibvirtOptions,
	// *external.Options): the fields above fill in what they leave unset.
	Own any
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
					lo, err := OwnOptions[LiveOptions](o, "live")
					if err != nil {
						return nil, err
					}
					lo.Speed = cmp.Or(lo.Speed, o.Speed)
					return NewLiveCluster(co, lo)
				})
		}}
	Libvirt = WorldDef{Name: "libvirt", Doc: "real QEMU domains on libvirtd in real time, after ci/setup-libvirt.sh and ci/build-guest.sh; Ctrl-C cleans up",
		Caps: LibvirtCapabilities, Open: func(sc *Scenario, defects impl.Switches, o RunOptions) (World, error) {
			lo, err := OwnOptions[LibvirtOptions](o, "libvirt")
			if err != nil {
				return nil, err
			}
			lo.URI, lo.Ctx, lo.Log, lo.Run = cmp.Or(lo.URI, o.URI), cmp.Or(lo.Ctx, o.Ctx), cmp.Or(lo.Log, o.Log), cmp.Or(lo.Run, o.RunID)
			return openCluster(sc, defects, o.Seed, Limits{}, lo.Ctx, LibvirtCapabilities,
				"the run's domains and files were removed",
				func(co Options) (*Cluster, error) { return NewLibvirtCluster(co, lo) })
		}}
)

// OwnOptions is a copy of the world's own options in o (the zero value where o has none); an error
// names the type the world wants.
func OwnOptions[T any](o RunOptions, world string) (T, error) {
	var zero T
	switch v := o.Own.(type) {
	case nil:
		return zero, nil
	case *T:
		return *v, nil
	case T:
		return v, nil
	}
	return zero, fmt.Errorf("the %s world's own options are a %T, not a %T", world, zero, o.Own)
}
