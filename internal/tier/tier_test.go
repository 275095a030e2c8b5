package tier

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnabledReadsTheOneVariable(t *testing.T) {
	for _, tc := range []struct {
		env  string
		tier Tier
		want bool
	}{
		{"", Libvirt, false},
		{"libvirt", Libvirt, true},
		{"containers", Libvirt, false},
		{"containers,libvirt", Libvirt, true},
		{"all", Containers, true},
		{"libvirtx", Libvirt, false},
	} {
		t.Setenv(Env, tc.env)
		if got := Enabled(tc.tier); got != tc.want {
			t.Errorf("%s=%q: %s enabled %v, want %v", Env, tc.env, tc.tier, got, tc.want)
		}
	}
}

// The gate stays one: no test file of the module gates itself another way (a build tag, its own
// flag, -short), and no script reads the old CSCONFORM_SKIP_* variables.
func TestOneGate(t *testing.T) {
	others := []string{"//go:build libvirt", "testing.Short()", `flag.Bool("containers"`, `flag.String("driver"`, "CSCONFORM_SKIP_"}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".sh")) || strings.HasSuffix(path, "tier_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, o := range others {
			if strings.Contains(string(data), o) {
				t.Errorf("%s gates with %s: use tier.Need (internal/tier)", path, o)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// MostlyWaiting raises -test.parallel, never lowers it, and leaves a value given on the command line.
func TestMostlyWaiting(t *testing.T) {
	p := flag.Lookup("test.parallel")
	if p == nil {
		t.Fatal("no test.parallel flag")
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	before := p.Value.String()
	t.Cleanup(func() { _ = p.Value.Set(before) })
	MostlyWaiting(1)
	if got := p.Value.String(); got != before {
		t.Errorf("MostlyWaiting(1) set -test.parallel from %s to %s", before, got)
	}
	MostlyWaiting(1000)
	want := "1000"
	if given {
		want = before
	}
	if got := p.Value.String(); got != want {
		t.Errorf("MostlyWaiting(1000): -test.parallel %s, want %s (given on the command line: %v)", got, want, given)
	}
}
