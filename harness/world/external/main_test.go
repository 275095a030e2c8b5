package external

import (
	"os"
	"testing"

	"github.com/csconform/csconform/internal/tier"
)

// The long tests here each run a reference server in the live world and mostly wait on it: five at
// once rather than two.
func TestMain(m *testing.M) {
	tier.MostlyWaiting(6)
	os.Exit(m.Run())
}
