package main

// Exit statuses, one scheme for every command.
const (
	exitOK          = 0 // nothing found
	exitFound       = 1 // a violation: an invariant broken or a history no sequential order explains
	exitBadInput    = 2 // bad input (flags, files), or the run could not be done
	exitUndecided   = 3 // could not decide: the linearizability checker ran out of time on some object
	exitExpectation = 4 // an expectation was not met
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
