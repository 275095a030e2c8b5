package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/csconform/csconform/internal/tier"
)

// Every explore finding under cloudstack-4.22 (a few seeds) exports a Marvin test that compiles
// (python3 -m py_compile; Marvin itself is not available here); --marvin refuses an existing file and
// writes nothing when nothing is found.
func TestExploreMarvinCompiles(t *testing.T) {
	tier.Need(t, tier.Long) // four explore runs with shrinking (~15 s)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the generated Marvin tests are not compiled here (CI's Debian image has it)")
	}
	dir := t.TempDir()
	found := 0
	for seed := 1; seed <= 4; seed++ {
		file := filepath.Join(dir, "seed"+strconv.Itoa(seed)+".py")
		var out, errb bytes.Buffer
		code := run([]string{"explore", "--profile", "cloudstack-4.22", "--budget", "20", "--seed", strconv.Itoa(seed), "--quiet", "--marvin", file}, &out, &errb)
		if code != exitFound {
			if !strings.Contains(out.String(), "no finding: no Marvin test written") {
				t.Errorf("seed %d: exit %d, and no word of the Marvin test: %s%s", seed, code, out.String(), errb.String())
			}
			continue
		}
		found++
		if c, err := exec.Command(py, "-m", "py_compile", file).CombinedOutput(); err != nil {
			src, _ := os.ReadFile(file)
			t.Errorf("seed %d: the Marvin test does not compile: %v\n%s\n%s", seed, err, c, src)
		}
	}
	if found == 0 {
		t.Fatal("no seed found anything under cloudstack-4.22")
	}
	existing := filepath.Join(dir, "seed1.py")
	runCLICases(t, []cliCase{
		{[]string{"explore", "--profile", "cloudstack-4.22", "--budget", "1", "--seed", "1", "--quiet", "--marvin", existing}, 2, "--marvin " + existing + " exists"},
		{[]string{"explore", "--profile", "fixed", "--budget", "3", "--seed", "5", "--quiet", "--marvin", filepath.Join(dir, "none.py")}, 0, "no finding: no Marvin test written"},
	})
}
