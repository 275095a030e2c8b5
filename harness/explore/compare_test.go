package explore

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
)

// TestIncrementalCheckMatchesFull runs random programs under cloudstack-4.22 (whose defects make
// violations to find) with CSCONFORM_CHECK=compare: after every step the incremental check and the
// full one must find the same violations and make the same observations (-rapid.checks=N for more).
func TestIncrementalCheckMatchesFull(t *testing.T) {
	tier.Need(t, tier.Long) // random programs, checked twice after every step
	t.Setenv(harness.CheckModeEnv, "compare")
	d, err := impl.ProfileSwitches("cloudstack-4.22")
	if err != nil {
		t.Fatal(err)
	}
	violated := 0
	rapid.Check(t, func(rt *rapid.T) {
		sc, _ := ProgramFor(rt, Everything)
		out, err := Run(sc, Options{Profile: "cloudstack-4.22", Defects: d})
		if err != nil {
			rt.Fatalf("run: %v", err)
		}
		if len(out.Result.Violations) > 0 {
			violated++
		}
	})
	t.Logf("%d of the programs violated an invariant", violated)
}
