package main

// repro's worlds (--driver), from world.All.

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/harness/world"
	"github.com/csconform/csconform/harness/world/external"
)

// drivers are repro's --driver choices: the worlds a scenario file runs in (the external one is
// --api's).
var drivers = func() []string {
	var d []string
	for _, w := range world.All {
		if w.Name != external.Def.Name {
			d = append(d, w.Name)
		}
	}
	return d
}()

// driverHelp is --driver's help: each world's line.
func driverHelp(names []string) string {
	var b strings.Builder
	b.WriteString("`NAME` of the world the scenario runs in, one of:")
	for i, n := range names {
		w, _ := world.Named(n)
		sep := "."
		if i < len(names)-1 {
			sep = ";"
		}
		fmt.Fprintf(&b, " %s, %s%s", n, w.Doc, sep)
	}
	b.WriteString(" What each cannot do: csconform faults")
	return b.String()
}

// reproContext is cancelled by Ctrl-C or SIGTERM, so a run on real domains stops and cleans up.
func reproContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// checkDomains checks a --domains value.
func checkDomains(d string) error {
	switch d {
	case container.DomainsAuto, container.DomainsLibvirt, container.DomainsSimulated:
		return nil
	}
	return fmt.Errorf("--domains %q: want auto, libvirt or simulated", d)
}
