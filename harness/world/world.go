// Package world is the worlds a scenario runs in, by the name --driver gives them: the simulator,
// the live world and libvirt (package harness: an in-process cluster on three substrates), the
// containers (world/container) and an external CloudStack (world/external). Each declares what it
// can do (harness.Capabilities) beside itself; cmd, conformance and explore pick worlds here.
package world

import (
	"fmt"
	"strings"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/world/container"
	"github.com/csconform/csconform/harness/world/external"
)

// All are the worlds, in the order the docs give them.
var All = []harness.WorldDef{harness.Simulator, harness.Live, harness.Libvirt, container.Def, external.Def}

// Names lists the worlds by name, in the order of All.
var Names = func() []string {
	var n []string
	for _, w := range All {
		n = append(n, w.Name)
	}
	return n
}()

// Named is a world by name; the error lists the names.
func Named(name string) (harness.WorldDef, error) {
	for _, w := range All {
		if w.Name == name {
			return w, nil
		}
	}
	return harness.WorldDef{}, fmt.Errorf("unknown world %q (one of %s)", name, strings.Join(Names, ", "))
}

// CapabilitiesOf is a world's declaration by name.
func CapabilitiesOf(name string) (harness.Capabilities, error) {
	w, err := Named(name)
	return w.Caps, err
}
