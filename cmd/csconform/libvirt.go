package main

// The libvirt driver for repro (real QEMU domains on libvirtd, server and agents in this process)
// and csconform cleanup.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/libvirt"
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

func cleanupCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	uri := fs.String("uri", libvirt.DefaultURI, "libvirtd URI")
	run := fs.String("run", "", "remove only this run's domains and files")
	all := fs.Bool("all", false, "remove every run's domains and files (the default)")
	dir := fs.String("dir", "", "base directory of the run files (default $CSCONFORM_RUN_DIR or /var/lib/csconform)")
	containers := fs.Bool("containers", false, "remove the containers, networks, volumes and images of container runs instead")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *containers {
		return cleanupContainers(*run, *uri, *dir, stdout, stderr)
	}
	if fs.NArg() > 0 || (*all && *run != "") {
		fmt.Fprintln(stderr, "csconform cleanup: usage: csconform cleanup [--containers] [--uri URI] [--run ID | --all] [--dir DIR]")
		return 2
	}
	removed, err := libvirt.Cleanup(*uri, *dir, *run)
	for _, r := range removed {
		fmt.Fprintln(stdout, "removed", r)
	}
	// The harness runs the server and the agents inside the csconform process and starts no other
	// process of its own: the domains' QEMU processes are libvirt's and end with their domains.
	if err != nil {
		fmt.Fprintln(stderr, "csconform cleanup:", err)
		return 2
	}
	if len(removed) == 0 {
		fmt.Fprintln(stdout, "nothing to remove: no csconform-labelled domain or run directory")
	}
	return 0
}

// checkDomains checks a --domains value.
func checkDomains(d string) error {
	switch d {
	case container.DomainsAuto, container.DomainsLibvirt, container.DomainsSimulated:
		return nil
	}
	return fmt.Errorf("--domains %q: want auto, libvirt or simulated", d)
}

// cleanupContainers removes what container runs left: everything labelled org.csconform.run (=run),
// and with a run, its libvirt domains and files too (where libvirtd answers).
func cleanupContainers(run, uri, dir string, stdout, stderr io.Writer) int {
	ctx, stop := reproContext()
	defer stop()
	removed, err := container.Cleanup(ctx, run)
	if run != "" && libvirt.Available(uri, "") == nil {
		more, lerr := libvirt.Cleanup(uri, dir, run)
		removed = append(removed, more...)
		err = errors.Join(err, lerr)
	}
	for _, r := range removed {
		fmt.Fprintln(stdout, "removed", r)
	}
	if err != nil {
		fmt.Fprintln(stderr, "csconform cleanup:", err)
		return 2
	}
	if len(removed) == 0 {
		fmt.Fprintln(stdout, "nothing to remove: no csconform-labelled container, network, volume or image")
	}
	return 0
}
