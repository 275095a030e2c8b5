package explore

import (
	"testing"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func programText(t *testing.T, sc *harness.Scenario) string {
	data, err := yaml.Marshal(sc)
	require.NoError(t, err)
	return string(data)
}

// TestGuideKeepsReplay: the guide only chooses among seeds, so every case is its seed's program: the
// same seed runs the same sequence of cases, the program the guide weighed is the one that ran, and
// Explore(o, 1, case seed) runs that case again.
func TestGuideKeepsReplay(t *testing.T) {
	o := Options{Profile: "fixed", Defects: impl.Switches{}}
	run := func() []*Outcome {
		var outs []*Outcome
		o := o
		o.Seen = func(out *Outcome) { outs = append(outs, out) }
		_, ran, err := Explore(o, 30, 99, 200)
		require.NoError(t, err)
		require.Equal(t, 30, ran)
		return outs
	}
	a, b := run(), run()
	require.Len(t, a, 30)
	assert.Equal(t, uint64(99), a[0].Seed, "the first case is the seed's own")
	draw := programOf(Everything)
	for i := range a {
		require.Equal(t, a[i].Seed, b[i].Seed, "case %d", i)
		assert.Equal(t, programText(t, a[i].Program), programText(t, draw(a[i].Seed)), "case %d: the program weighed is not the one run", i)
	}
	for _, i := range []int{7, 29} {
		var again *Outcome
		o := o
		o.Seen = func(out *Outcome) { again = out }
		_, _, err := Explore(o, 1, a[i].Seed, 200)
		require.NoError(t, err)
		assert.Equal(t, programText(t, a[i].Program), programText(t, again.Program), "case %d does not replay from its seed", i)
	}
}

// TestGuideFavoursWhatPaysOff: a feature that keeps reaching something new scores above one that ran
// as often for nothing; an untried one scores as high as one that always paid off.
func TestGuideFavoursWhatPaysOff(t *testing.T) {
	g := NewGuide()
	paying := &harness.Scenario{Hosts: []string{"h1"}, Steps: []harness.Step{{Fault: "ms-restart"}}}
	idle := &harness.Scenario{Hosts: []string{"h1"}, Steps: []harness.Step{{Op: "stop", VM: "vm1"}}}
	untried := &harness.Scenario{Hosts: []string{"h1"}, Steps: []harness.Step{{Fault: "agent-kill", Host: "h1"}}}
	for i := range 5 {
		cov := NewCoverage()
		cov.Logs[string(rune('a'+i))] = true // something new every time
		g.observe(paying, cov)
		g.observe(idle, NewCoverage())
	}
	assert.Greater(t, g.score(paying), g.score(idle))
	assert.Equal(t, g.score(untried), g.score(paying))
	assert.Greater(t, g.score(untried), g.score(idle))
}
