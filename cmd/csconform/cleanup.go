package main

// csconform cleanup: whatever flag is given, everything any run left (or one run's, with --run):
// Docker objects, libvirt domains and run files, each kind looked for where it lives. It says what
// it removed, what remains and what it could not look at.

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/libvirt"
)

// leftoverPlace is where runs leave one kind of thing, and how to remove it and see what remains.
type leftoverPlace struct {
	name   string
	named  bool // a flag names it: not reaching it fails the cleanup
	reach  func(ctx context.Context) error
	remove func(ctx context.Context, run string) ([]string, error)
	list   func(ctx context.Context, run string) ([]string, error)
}

// placesFunc gives the places to clean up.
type placesFunc func(uri, dir string, uriNamed, containersNamed bool) []leftoverPlace

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

// cleanupWith runs csconform cleanup with args on these places (tests give fakes).
func cleanupWith(args []string, stdout, stderr io.Writer, places placesFunc) int {
	code := exitOK
	e := &cliEnv{stdin: os.Stdin, stdout: stdout, stderr: stderr, code: &code, places: places}
	return execute(rootCmd(e), append([]string{"cleanup"}, args...), e)
}

// cleanup removes what runs left; uriNamed says --uri was given.
func cleanup(o *cleanupOpts, uriNamed bool, places placesFunc, stdout, stderr io.Writer) int {
	if o.all && o.run != "" {
		fmt.Fprintln(stderr, "csconform cleanup: usage: csconform cleanup [--run ID | --all] [--uri URI] [--dir DIR] [--containers]")
		return 2
	}
	ctx, stop := reproContext()
	defer stop()
	return cleanupAll(ctx, places(o.uri, o.dir, uriNamed, o.containers), o.run, stdout, stderr)
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
