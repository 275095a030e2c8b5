//go:build mutants

package impl

import "fmt"

const mutantsBuilt = true

// SetMutant switches a mutant on ("" for none). Not safe while a server runs: switch between runs.
func SetMutant(m Mutant) error {
	if m != "" {
		found := false
		for _, x := range Mutants {
			found = found || x.ID == m
		}
		if !found {
			return fmt.Errorf("unknown mutant %q", m)
		}
	}
	activeMutant = m
	return nil
}
