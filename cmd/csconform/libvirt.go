package main

// The libvirt driver for repro (real QEMU domains on libvirtd, server and agents in this process).

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
)

// drivers are repro's --driver choices.
var drivers = []string{"sim", "libvirt", "container"}

// reproContext is cancelled by Ctrl-C or SIGTERM, so a run on real domains stops and cleans up.
func reproContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runOn runs one scenario with a driver.
func runOn(ctx context.Context, driver, uri, domains string, sc *harness.Scenario, profile string, sw impl.Switches, seed uint64, lim harness.Limits, stderr io.Writer) (*harness.Result, error) {
	if driver == "container" {
		// An interrupted run says so itself, and what it removed.
		return harness.RunScenarioContainer(sc, profile, sw, seed, harness.ContainerOptions{Ctx: ctx, Log: stderr, Domains: domains})
	}
	if driver != "libvirt" {
		return harness.RunScenarioLimited(sc, profile, sw, seed, lim)
	}
	r, err := harness.RunScenarioLibvirt(sc, profile, sw, seed, harness.LibvirtOptions{URI: uri, Ctx: ctx, Log: stderr})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted (%v); the run's domains and files were removed", err)
	}
	return r, err
}

// checkDomains checks a --domains value.
func checkDomains(d string) error {
	switch d {
	case container.DomainsAuto, container.DomainsLibvirt, container.DomainsSimulated:
		return nil
	}
	return fmt.Errorf("--domains %q: want auto, libvirt or simulated", d)
}
