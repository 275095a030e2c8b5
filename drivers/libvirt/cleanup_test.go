package libvirt

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Run files: only directories carrying the .csconform-run label are listed and removed (one run's
// with run set); an unlabelled directory is never touched, whatever its name.
func TestCleanupFiles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, d := range []struct{ dir, label string }{{"r1", "r1"}, {"r2", "r2"}, {"mine", ""}} {
		if err := os.MkdirAll(filepath.Join(base, d.dir, "vols"), 0o755); err != nil {
			t.Fatal(err)
		}
		if d.label != "" {
			os.WriteFile(filepath.Join(base, d.dir, runLabelFile), []byte(d.label+"\n"), 0o644)
		}
	}
	if got := LeftoverFiles(base, ""); !slices.Equal(got, []string{"dir " + filepath.Join(base, "r1"), "dir " + filepath.Join(base, "r2")}) {
		t.Fatalf("leftovers: %v", got)
	}
	if got, err := CleanupFiles(base, "r2"); err != nil || !slices.Equal(got, []string{"dir " + filepath.Join(base, "r2")}) {
		t.Fatalf("cleanup r2: %v %v", got, err)
	}
	if got := LeftoverFiles(base, "r2"); len(got) != 0 {
		t.Fatalf("r2 remains: %v", got)
	}
	if got, err := CleanupFiles(base, ""); err != nil || len(got) != 1 {
		t.Fatalf("cleanup all: %v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(base, "mine", "vols")); err != nil {
		t.Fatalf("an unlabelled directory was touched: %v", err)
	}
}
