package tier

import (
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
