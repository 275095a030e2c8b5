package main

// The list commands: scenarios, profiles, faults and config, as text or --json.

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/world"
	"github.com/csconform/csconform/harness/world/external"
	"github.com/csconform/csconform/impl"
)

// list prints rows() as JSON with --json, else the text.
func list(asJSON bool, stdout, stderr io.Writer, rows func() any, text func(io.Writer)) int {
	if !asJSON {
		text(stdout)
		return exitOK
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rows()); err != nil {
		fmt.Fprintln(stderr, "csconform:", err)
		return exitBadInput
	}
	return exitOK
}

// showScenario prints a built-in scenario's file.
func showScenario(name string, stdout, stderr io.Writer) int {
	src, err := conformance.Source(name)
	if err != nil {
		fmt.Fprintln(stderr, "csconform scenarios:", err)
		return exitBadInput
	}
	stdout.Write(src)
	return exitOK
}

func listScenarios(asJSON bool, stdout, stderr io.Writer) int {
	all, err := conformance.Builtin()
	if err != nil {
		fmt.Fprintln(stderr, "csconform:", err)
		return exitBadInput
	}
	type row struct {
		Name   string `json:"name"`
		Report string `json:"report,omitempty"`
		Title  string `json:"title"`
	}
	return list(asJSON, stdout, stderr, func() any {
		var rows []row
		for _, s := range all {
			rows = append(rows, row{s.Name, s.Report, s.Title})
		}
		return rows
	}, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tREPORT\tTITLE")
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Report, s.Title)
		}
		tw.Flush()
	})
}

func listProfiles(asJSON bool, stdout, stderr io.Writer) int {
	type profile struct {
		Name    string   `json:"name"`
		Defects []string `json:"defectsOn"`
	}
	type defect struct {
		Name    string `json:"name"`
		Summary string `json:"summary"`
	}
	var profiles []profile
	for _, p := range impl.ProfileNames() {
		s, _ := impl.ProfileSwitches(p)
		profiles = append(profiles, profile{p, orNone(s.On())})
	}
	return list(asJSON, stdout, stderr, func() any {
		out := struct {
			Profiles []profile `json:"profiles"`
			Defects  []defect  `json:"defects"`
		}{Profiles: profiles}
		for _, d := range impl.Defects {
			out.Defects = append(out.Defects, defect{d.Name(), d.Summary()})
		}
		return out
	}, func(w io.Writer) {
		for _, p := range profiles {
			fmt.Fprintf(w, "%-16s defects on: %s\n", p.Name, strings.Join(p.Defects, ","))
		}
		fmt.Fprintln(w)
		for _, d := range impl.Defects {
			fmt.Fprintf(w, "%-4s %s\n", d.Name(), d.Summary())
		}
	})
}

func listFaults(asJSON bool, stdout, stderr io.Writer) int {
	type kind struct {
		Name       string   `json:"name"`
		Needs      []string `json:"needs"`
		Disruptive bool     `json:"disruptive"`
		// Worlds are the --driver worlds that can apply it (harness.Capabilities).
		Worlds []string `json:"worlds"`
		Doc    string   `json:"doc"`
		// Simulator says whether CloudStack's Simulator hypervisor can carry it (repro --api --faults
		// simulator): the configureSimulator mocks, or why not.
		Simulator simulatorMapping `json:"simulator"`
	}
	var kinds []kind
	for _, k := range faults.Kinds {
		var worlds []string
		for _, w := range world.Names {
			if c, _ := world.CapabilitiesOf(w); c.Can(harness.FaultCap(k.Name)) {
				worlds = append(worlds, w)
			}
		}
		ok, how := external.SimulatorMapping(k.Name)
		kinds = append(kinds, kind{k.Name, orNone(k.Needs), k.Disruptive, worlds, k.Doc, simulatorMapping{ok, how}})
	}
	return list(asJSON, stdout, stderr, func() any { return kinds }, func(w io.Writer) {
		for _, k := range kinds {
			on := strings.Join(k.Worlds, ",")
			if len(k.Worlds) == len(world.Names) {
				on = "all"
			}
			fmt.Fprintf(w, "%-17s needs %-18s on %-27s %s\n", k.Name, strings.Join(k.Needs, ","), on, k.Doc)
		}
		fmt.Fprintln(w, "\n(on: the worlds that can apply it: sim, live, libvirt, container, external (through csconform inject);\na scenario with a fault its world cannot apply is refused before it starts, with why)")
		fmt.Fprintln(w, "\nThrough CloudStack's simulator (repro --api URL --faults simulator: configureSimulator mocks):")
		for _, k := range kinds {
			yes := "no: "
			if k.Simulator.Expressible {
				yes = "yes: "
			}
			fmt.Fprintf(w, "%-17s %s%s\n", k.Name, yes, k.Simulator.How)
		}
	})
}

// simulatorMapping is a fault through the simulator: expressible, and how (the mocks) or why not.
type simulatorMapping struct {
	Expressible bool   `json:"expressible"`
	How         string `json:"how"`
}

func listConfig(asJSON bool, stdout, stderr io.Writer) int {
	type key struct {
		Name        string `json:"name"`
		Default     string `json:"default"`
		Unit        string `json:"unit,omitempty"`
		Range       string `json:"range"`
		Description string `json:"description"`
	}
	var keys []key
	for _, k := range impl.ConfigKeys {
		keys = append(keys, key{k.Name, k.Default, k.Unit, plainNumbers(k.Range()), k.Description})
	}
	return list(asJSON, stdout, stderr, func() any { return keys }, func(w io.Writer) {
		// columns as wide as their longest cell: a fixed width let the long key names push their
		// row out of line
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tDEFAULT\tUNIT\tRANGE\tDESCRIPTION")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Name, k.Default, k.Unit, k.Range, k.Description)
		}
		tw.Flush()
	})
}

var expNumber = regexp.MustCompile(`\d+(\.\d+)?e[+-]?\d+`)

// plainNumbers writes the numbers of a key's range in full (86400000, not 8.64e+07).
func plainNumbers(s string) string {
	return expNumber.ReplaceAllStringFunc(s, func(n string) string {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return n
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	})
}
