package external

import (
	"fmt"

	"github.com/csconform/csconform/harness"
)

// Repro runs one scenario against the external CloudStack eo names, its outcome compared with
// expect's expectations ("": none). A run that eo.Ctx stopped says so: its faults are healed and
// what it created removed by then (Close).
func Repro(sc *harness.Scenario, eo Options, expect string) (*harness.Result, error) {
	r, err := harness.Run(Def, sc, harness.RunOptions{Profile: expect, Own: &eo})
	if err != nil && eo.Ctx != nil && eo.Ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted (%v); the run's faults were healed and what it created removed", err)
	}
	return r, err
}
