// Package detect holds the detectors judged at the end of a run, one a file: each a pure function of
// the recorded history's events (model/history) and, where the history does not carry the fact, a
// small observation any world can fill (Storage: what primary storage holds; Job: the async_job rows;
// ServerStop: which servers stopped and by when their peers should have cleaned up; Transition: what
// is in a transitional state; HaWorkRow: op_ha_work), so that every world that records a history —
// the simulator, the live world, libvirt, containers — and, where the lines exist, a real
// management-server.log feeds it alike. The harness gathers the observation from its world and calls
// the detector. Each detector's tests run it on its planted bugs and on the same runs without them.
//
// Beside the detectors, the two rules the checks' view of a world passes through: the operator's
// assertion of a forced stop (AssertedStops) and the two looks of a world read non-atomically
// (TwoLooks).
//
// The detectors here read CloudStack's own log lines where the records a world can observe do not
// carry the fact (HA's work items are rows of op_ha_work that no API lists), in the wording of
// HighAvailabilityManagerImpl, which logcheck reads in real logs too.
package detect
