package main

// Exit statuses, one scheme for every command.
const (
	exitOK          = 0 // nothing found
	exitFound       = 1 // a violation: an invariant broken or a history no sequential order explains
	exitBadInput    = 2 // bad input (flags, files), or the run could not be done
	exitUndecided   = 3 // could not decide: the linearizability checker ran out of time on some object
	exitExpectation = 4 // an expectation was not met
	// exitStopped: a simulated run reached --max-steps or --max-sim-time before it finished. Not bad
	// input (the same scenario passes with a larger bound) and no verdict (what it had is printed),
	// so CI can tell "raise the bound" from "fix the flags".
	exitStopped = 5
)

// verdictExit is the status of a run's findings: a violation anywhere wins over an undecided object.
func verdictExit(found, undecided bool) int {
	switch {
	case found:
		return exitFound
	case undecided:
		return exitUndecided
	}
	return exitOK
}
