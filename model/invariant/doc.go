// Package invariant holds the safety invariants csconform checks: pure
// functions over a Snapshot that pairs the management server's records with
// what the hypervisors actually run. A violation is a race the orchestrator
// let through (orphaned domains, leaked IPs or volumes, network writes
// around the lock, start failures nothing explains).
package invariant
