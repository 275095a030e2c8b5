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

// Run runs sc in the world named name (harness.Run).
func Run(name string, sc *harness.Scenario, o harness.RunOptions) (*harness.Result, error) {
	w, err := Named(name)
	if err != nil {
		return nil, err
	}
	return harness.Run(w, sc, o)
}

// CapabilitiesOf is a world's declaration by name.
func CapabilitiesOf(name string) (harness.Capabilities, error) {
	w, err := Named(name)
	return w.Caps, err
}

// DetectorTable is the detectors' table of docs/detectors.md, from the worlds' declarations: one row
// a detector, which worlds run it (✓) and which cannot (—), and why not, the worlds that share a
// reason named together.
func DetectorTable() string {
	var b strings.Builder
	b.WriteString("| detector |")
	for _, w := range All {
		b.WriteString(" " + w.Name + " |")
	}
	b.WriteString(" why not |\n|---|")
	for range All {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, d := range harness.Detectors() {
		b.WriteString("| `" + d + "` |")
		var whys []string
		who := map[string][]string{}
		for _, w := range All {
			if w.Caps.Runs(d) {
				b.WriteString(" ✓ |")
				continue
			}
			b.WriteString(" — |")
			why := w.Caps.Lacks[harness.DetectorCap(d)]
			if who[why] == nil {
				whys = append(whys, why)
			}
			who[why] = append(who[why], w.Name)
		}
		var cells []string
		for _, why := range whys {
			cells = append(cells, strings.Join(who[why], ", ")+": "+why)
		}
		b.WriteString(" " + strings.Join(cells, "; ") + " |\n")
	}
	return b.String()
}
