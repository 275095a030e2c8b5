// Package guard says, for each transition of CloudStack's state machines (model/vm, model/network,
// model/host, and the async jobs), when CloudStack allows it: a guard is a predicate over what a
// history has shown so far — the reports seen and when, the settings in force, related objects'
// states, lock holders, pending work jobs, the thread that acts — cited to the Java method that
// enforces it. A Checker reads a history event by event and judges every state change against the
// guards of its row; a guard whose context the history lacks (a log without lock lines, a world
// whose settings are unknown) says so instead of guessing.
//
// The guards describe the fixed behaviour (the fixes of D1, D2, D3 and the C-series): a known
// defect of CloudStack 4.22 trips one of them or another detector (see the defect table test).
package guard
