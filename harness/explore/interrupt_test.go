package explore

import (
	"context"
	"errors"
	"testing"

	"github.com/csconform/csconform/impl"
)

// An exploration whose context is done (Ctrl-C) stops: it runs no more cases and says so, instead of
// running its whole budget as before.
func TestExploreStopsWhenInterrupted(t *testing.T) {
	sw, err := impl.ProfileSwitches("fixed")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	o := Options{Profile: "fixed", Defects: sw, Ctx: ctx, Seen: func(*Outcome) {
		if ran++; ran == 3 {
			cancel()
		}
	}}
	f, cases, err := Explore(o, 1000, 1, 0)
	if !errors.Is(err, ErrInterrupted) || f != nil || ran != 3 || cases != 3 {
		t.Fatalf("Explore = %v, %d cases (%d seen), %v; want ErrInterrupted after 3 cases", f, cases, ran, err)
	}
}
