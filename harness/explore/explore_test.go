package explore

import (
	"flag"
	"testing"

	"github.com/csconform/csconform/impl"
	"pgregory.net/rapid"
)

var (
	profileFlag = flag.String("csconform.profile", "fixed", "profile the property test runs against")
	defectsFlag = flag.String("csconform.defects", "", "defect switches instead of the profile (D1,D2a,…)")
)

// TestExplore is the property: under the fixed profile no random program breaks an invariant or a
// model. Run it against the defects with -csconform.profile=cloudstack-4.22; replay a failure with the
// -rapid.seed it prints.
func TestExplore(t *testing.T) {
	sw, err := impl.Profile(*profileFlag)
	if *defectsFlag != "" {
		sw, err = impl.ParseDefects(*defectsFlag)
	}
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, Property(Options{Profile: *profileFlag, Defects: sw}))
}
