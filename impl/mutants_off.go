//go:build !mutants

package impl

import "errors"

const mutantsBuilt = false

// SetMutant switches a mutant on ("" for none); only a binary built with -tags mutants can.
func SetMutant(Mutant) error {
	return errors.New("this binary has no mutation points: build it with -tags mutants")
}
