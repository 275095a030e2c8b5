package impl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The one table: every defect constant has a name and a summary, names are unique, ParseDefects
// turns each CloudStack defect's name back into exactly that switch, and the planted bugs are neither
// in Defects nor accepted by ParseDefects (only by Planted).
func TestDefectTable(t *testing.T) {
	seen := map[string]Defect{}
	for d := Defect(1); d < numDefects; d++ {
		if d.Name() == "" || d.Summary() == "" {
			t.Errorf("defect %d has no name or summary", uint8(d))
		}
		if o, dup := seen[d.Name()]; dup {
			t.Errorf("%s names both %d and %d", d.Name(), uint8(o), uint8(d))
		}
		seen[d.Name()] = d
	}
	for _, d := range Defects {
		sw, err := ParseDefects(d.Name())
		if err != nil || len(sw.On()) != 1 || !sw[d] {
			t.Errorf("ParseDefects(%q) = %v, %v; want only %s", d.Name(), sw.On(), err, d)
		}
	}
	for _, d := range []Defect{PlantedStopTimeoutIsSuccess, PlantedIPFromStaleRead} {
		if _, err := ParseDefects(d.Name()); err == nil {
			t.Errorf("ParseDefects accepts the planted %s", d)
		}
		if p, ok := Planted(d.Name()); !ok || p != d {
			t.Errorf("Planted(%q) = %v, %v", d.Name(), p, ok)
		}
		for _, c := range Defects {
			if c == d {
				t.Errorf("the planted %s is among CloudStack's Defects", d)
			}
		}
	}
	if Defect(0).Summary() != "" || numDefects.Summary() != "" {
		t.Error("an out-of-range Defect has a summary")
	}
}

// TestDefectTitlesAreTheDocs: each switch's title is the heading the docs give it (docs/defects.md
// for D1 and D3, docs/profiles.md for the races found since) or, for a D2 switch, its row of the
// profiles.md table; each upstream reference is one docs/defects.md cites. A finding names its defect
// by these (csconform explore), so they must not drift from the pages a reader is sent to.
func TestDefectTitlesAreTheDocs(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	defects, profiles := read("defects.md"), read("profiles.md")
	for _, d := range Defects {
		var want, page string
		switch {
		case d == D1 || d == D3:
			want, page = "\n## "+d.Name()+": "+d.Title()+"\n", defects
		case family(d.Name()) == "D2":
			want, page = "\n| "+d.Name()+" | "+d.Title()+" |\n", profiles
		default:
			want, page = "\n### "+d.Name()+" — "+d.Title()+"\n", profiles
		}
		if d.Title() == "" || !strings.Contains(page, want) {
			t.Errorf("%s: title %q is not in the docs as %q", d, d.Title(), strings.TrimSpace(want))
		}
		for _, u := range d.Upstream() {
			if !strings.Contains(defects, fmt.Sprintf("#%d", u.Number)) || u.Note == "" || !slices.Contains([]string{"issue", "pr", "related"}, u.Kind) {
				t.Errorf("%s: %+v is not a reference docs/defects.md cites, or lacks its kind or note", d, u)
			}
		}
	}
	for _, d := range []Defect{D1, D2a, D2e, D3} {
		if len(d.Upstream()) == 0 {
			t.Errorf("%s has no upstream reference (docs/defects.md gives them)", d)
		}
	}
	if got := D1.Upstream()[0].URL(); got != "https://github.com/apache/cloudstack/issues/14522" {
		t.Errorf("D1's issue: %s", got)
	}
	if got := D1.Upstream()[1].URL(); got != "https://github.com/apache/cloudstack/pull/12409" {
		t.Errorf("D1's PR: %s", got)
	}
}
