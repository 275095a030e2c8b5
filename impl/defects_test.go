package impl

import "testing"

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
