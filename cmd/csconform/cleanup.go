package main

// csconform cleanup: whatever flag is given, everything any run left (or one run's, with --run):
// Docker objects, libvirt domains and run files, each kind looked for where it lives. It says what
// it removed, what remains and what it could not look at.

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/libvirt"
)

const cleanupUsage = `Usage: csconform cleanup [--run ID | --all] [--uri URI] [--dir DIR] [--containers]

Removes what csconform runs left behind, libvirt and container runs alike (a run killed with kill -9
leaves containers and domains both): Docker containers, networks, volumes and images labelled
org.csconform.run, libvirt domains carrying csconform's metadata label, and run directories marked
.csconform-run. Nothing without those labels is touched. It prints each thing removed, then each
thing that remains, and a summary.
  --run ID      only this run's (default: every run's, as --all)
  --uri URI     libvirtd (default qemu:///system)
  --dir DIR     base directory of the run files (default $CSCONFORM_RUN_DIR or /var/lib/csconform)
  --containers  kept for old scripts: Docker must answer (it is looked at in any case)

A place that does not answer (no Docker daemon, no libvirtd) is reported as not looked at; it fails
the cleanup only when a flag names it (--containers for Docker, --uri for libvirtd).
Exit status: 0 nothing remains, 2 something remains, a named place did not answer, or bad usage.
`

// leftoverPlace is where runs leave one kind of thing, and how to remove it and see what remains.
type leftoverPlace struct {
	name   string
	named  bool // a flag names it: not reaching it fails the cleanup
	reach  func(ctx context.Context) error
	remove func(ctx context.Context, run string) ([]string, error)
	list   func(ctx context.Context, run string) ([]string, error)
}

// cleanupPlaces are the real places (tests give fakes).
func cleanupPlaces(uri, dir string, uriNamed, containersNamed bool) []leftoverPlace {
	return []leftoverPlace{
		{name: "Docker (containers, networks, volumes, images)", named: containersNamed,
			reach: container.Available, remove: container.Cleanup, list: container.Leftovers},
		{name: "libvirtd at " + uri + " (domains)", named: uriNamed,
			reach:  func(context.Context) error { return libvirt.Reachable(uri) },
			remove: func(_ context.Context, run string) ([]string, error) { return libvirt.CleanupDomains(uri, run) },
			list:   func(_ context.Context, run string) ([]string, error) { return libvirt.LeftoverDomains(uri, run) }},
		{name: "run files", named: true,
			reach:  func(context.Context) error { return nil },
			remove: func(_ context.Context, run string) ([]string, error) { return libvirt.CleanupFiles(dir, run) },
			list:   func(_ context.Context, run string) ([]string, error) { return libvirt.LeftoverFiles(dir, run), nil }},
	}
}

func cleanupCmd(args []string, stdout, stderr io.Writer) int {
	return cleanupWith(args, stdout, stderr, cleanupPlaces)
}

func cleanupWith(args []string, stdout, stderr io.Writer, places func(uri, dir string, uriNamed, containersNamed bool) []leftoverPlace) int {
	fs := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	uri := fs.String("uri", libvirt.DefaultURI, "")
	run := fs.String("run", "", "")
	all := fs.Bool("all", false, "")
	dir := fs.String("dir", "", "")
	containers := fs.Bool("containers", false, "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, cleanupUsage)
			return 0
		}
		fmt.Fprintf(stderr, "csconform cleanup: %v (see csconform cleanup -h)\n", err)
		return 2
	}
	if fs.NArg() > 0 || (*all && *run != "") {
		fmt.Fprintln(stderr, "csconform cleanup: usage: csconform cleanup [--run ID | --all] [--uri URI] [--dir DIR] [--containers]")
		return 2
	}
	uriNamed := false
	fs.Visit(func(f *flag.Flag) { uriNamed = uriNamed || f.Name == "uri" })
	ctx, stop := reproContext()
	defer stop()
	return cleanupAll(ctx, places(*uri, *dir, uriNamed, *containers), *run, stdout, stderr)
}

// cleanupAll removes from every place, then looks again at what remains.
func cleanupAll(ctx context.Context, places []leftoverPlace, run string, stdout, stderr io.Writer) int {
	whose := "any run"
	if run != "" {
		whose = "run " + run
	}
	removed, remain, failed := 0, 0, false
	var remains, notLooked []string
	for _, p := range places {
		if err := p.reach(ctx); err != nil {
			notLooked = append(notLooked, p.name)
			if p.named {
				fmt.Fprintf(stderr, "csconform cleanup: %s does not answer, nothing there was looked at: %v\n", p.name, err)
				failed = true
			} else {
				fmt.Fprintf(stdout, "not looked at: %s does not answer (%v)\n", p.name, err)
			}
			continue
		}
		done, err := p.remove(ctx, run)
		for _, r := range done {
			fmt.Fprintln(stdout, "removed", r)
		}
		removed += len(done)
		if err != nil {
			fmt.Fprintf(stderr, "csconform cleanup: %s: %v\n", p.name, err)
		}
		left, err := p.list(ctx, run)
		if err != nil {
			fmt.Fprintf(stderr, "csconform cleanup: %s: cannot list what remains: %v\n", p.name, err)
			failed = true
		}
		remains = append(remains, left...)
		remain += len(left)
	}
	for _, r := range remains {
		fmt.Fprintln(stdout, "remains", r)
	}
	summary := fmt.Sprintf("cleanup of %s: removed %d, %d remain", whose, removed, remain)
	if len(notLooked) > 0 {
		summary += fmt.Sprintf(", not looked at: %d place(s)", len(notLooked))
	}
	fmt.Fprintln(stdout, summary)
	if remain > 0 {
		fmt.Fprintf(stderr, "csconform cleanup: %d thing(s) of %s remain (listed above): remove them by hand\n", remain, whose)
		failed = true
	}
	if failed {
		return 2
	}
	return 0
}
