// Package detect holds the detectors that judge a recorded history on their own: each one a file, a
// pure function of the history's events (model/history) and what it says about the run, so that
// every world that records a history — the simulator, the live world, libvirt, containers — and,
// where the lines exist, a real management-server.log feeds it alike. Each detector's tests run it on
// its planted bugs (saved histories under testdata/, recorded from the catalogue's mutants of its
// class) and on the same runs without them.
//
// The detectors here read CloudStack's own log lines where the records a world can observe do not
// carry the fact (HA's work items are rows of op_ha_work that no API lists), in the wording of
// HighAvailabilityManagerImpl, which logcheck reads in real logs too.
package detect
