package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakePlace holds what runs left in one place, by run; stuck things cannot be removed.
type fakePlace struct {
	name   string
	items  map[string][]string // run -> things
	stuck  map[string]bool
	down   error
	listed int
}

func (f *fakePlace) place(named bool) leftoverPlace {
	return leftoverPlace{name: f.name, named: named,
		reach: func(context.Context) error { return f.down },
		remove: func(_ context.Context, run string) ([]string, error) {
			var done []string
			var err error
			for r, things := range f.items {
				if run != "" && r != run {
					continue
				}
				var keep []string
				for _, th := range things {
					if f.stuck[th] {
						keep = append(keep, th)
						err = errors.New(th + ": busy")
						continue
					}
					done = append(done, th)
				}
				f.items[r] = keep
			}
			slices.Sort(done)
			return done, err
		},
		list: func(_ context.Context, run string) ([]string, error) {
			f.listed++
			var out []string
			for r, things := range f.items {
				if run == "" || r == run {
					out = append(out, things...)
				}
			}
			slices.Sort(out)
			return out, nil
		}}
}

// cleanup finds everything any run left, whichever flag is given (issue 16: after kill -9 of a
// container run, cleanup --containers removed the Docker objects, exited 0 and left two QEMU
// domains running without a word), says what it removed and what remains, and exits 2 if
// anything does.
func TestCleanupFindsEverything(t *testing.T) {
	// kill -9 of container run r1: its containers, network, volume and image, two domains and its
	// run directory; run r2 left a domain too
	world := func() (docker, domains, files *fakePlace) {
		docker = &fakePlace{name: "Docker", items: map[string][]string{"r1": {"container csc-r1-ms", "container csc-r1-h1", "network csc-r1", "volume csc-r1-state", "image csconform:r1"}}}
		domains = &fakePlace{name: "libvirtd", items: map[string][]string{"r1": {"domain csc-r1-h1-i-2-3-VM", "domain csc-r1-h1-r-2-VM"}, "r2": {"domain csc-r2-h1-i-2-3-VM"}}}
		files = &fakePlace{name: "run files", items: map[string][]string{"r1": {"dir /var/lib/csconform/r1"}}}
		return
	}
	cases := []struct {
		name    string
		args    []string
		setup   func(docker, domains, files *fakePlace)
		code    int
		want    []string // in the output
		notWant []string
		left    int // things left in the world
	}{
		{name: "--containers removes the domains too", args: []string{"--containers"}, code: 0,
			want: []string{"removed container csc-r1-ms", "removed network csc-r1", "removed volume csc-r1-state", "removed image csconform:r1",
				"removed domain csc-r1-h1-i-2-3-VM", "removed domain csc-r1-h1-r-2-VM", "removed domain csc-r2-h1-i-2-3-VM", "removed dir /var/lib/csconform/r1",
				"cleanup of any run: removed 9, 0 remain"}},
		{name: "--containers --run r1: only r1's, all kinds", args: []string{"--containers", "--run", "r1"}, code: 0,
			want:    []string{"removed container csc-r1-h1", "removed domain csc-r1-h1-r-2-VM", "removed dir /var/lib/csconform/r1", "cleanup of run r1: removed 8, 0 remain"},
			notWant: []string{"csc-r2"}, left: 1},
		{name: "plain cleanup removes the containers too", args: nil, code: 0,
			want: []string{"removed container csc-r1-ms", "removed domain csc-r1-h1-i-2-3-VM", "cleanup of any run: removed 9, 0 remain"}},
		{name: "a domain that cannot be removed remains: said, exit 2", args: []string{"--containers"},
			setup: func(_, domains, _ *fakePlace) { domains.stuck = map[string]bool{"domain csc-r1-h1-r-2-VM": true} }, code: 2,
			want: []string{"removed container csc-r1-ms", "domain csc-r1-h1-r-2-VM: busy", "remains domain csc-r1-h1-r-2-VM", "removed 8, 1 remain", "1 thing(s) of any run remain"},
			left: 1},
		{name: "libvirtd not answering, not named: said, the rest removed", args: []string{"--containers", "--run", "r1"},
			setup: func(_, domains, _ *fakePlace) { domains.down = errors.New("connection refused") }, code: 0,
			want: []string{"removed container csc-r1-ms", "not looked at: libvirtd does not answer (connection refused)", "removed 6, 0 remain, not looked at: 1 place(s)"},
			left: 3},
		{name: "libvirtd not answering, named by --uri: exit 2", args: []string{"--uri", "qemu:///system"},
			setup: func(_, domains, _ *fakePlace) { domains.down = errors.New("connection refused") }, code: 2,
			want: []string{"libvirtd does not answer, nothing there was looked at: connection refused"}, left: 3},
		{name: "Docker not answering, named by --containers: exit 2", args: []string{"--containers"},
			setup: func(docker, _, _ *fakePlace) { docker.down = errors.New("no docker socket") }, code: 2,
			want: []string{"Docker does not answer", "removed domain csc-r1-h1-i-2-3-VM"}, left: 5},
		{name: "--all and --run", args: []string{"--all", "--run", "r1"}, code: 2, want: []string{"usage"}, left: 9},
		{name: "help", args: []string{"-h"}, code: 0, want: []string{"libvirt and container runs alike", "labelled"}, left: 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docker, domains, files := world()
			if c.setup != nil {
				c.setup(docker, domains, files)
			}
			var out, errb bytes.Buffer
			code := cleanupWith(c.args, &out, &errb, func(uri, dir string, uriNamed, containersNamed bool) []leftoverPlace {
				return []leftoverPlace{docker.place(containersNamed), domains.place(uriNamed), files.place(true)}
			})
			all := out.String() + errb.String()
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, all)
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("output does not say %q:\n%s", w, all)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(all, w) {
					t.Errorf("output says %q:\n%s", w, all)
				}
			}
			left := 0
			for _, p := range []*fakePlace{docker, domains, files} {
				for _, th := range p.items {
					left += len(th)
				}
			}
			if left != c.left {
				t.Errorf("%d things left, want %d", left, c.left)
			}
		})
	}
}
