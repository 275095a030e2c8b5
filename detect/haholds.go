package detect

// HaWorkRow is an op_ha_work row as the records hold it (no API lists the table): its type, its
// step, whether a worker has taken it, and the VM's update count (vm_instance.updated) when it was
// scheduled.
type HaWorkRow struct {
	Type, Step string
	Taken      bool
	PrevUpdate int64
}

// HaRestartHolds says whether an HA restart item holds the VM's power reports, as CloudStack's
// hasPendingHaWork does with C8 fixed: an item of type HA that is neither Done nor Cancelled, and that
// a worker has taken or that saw the VM as it is now (updateCount, its update count): restart()
// discards an item whose VM changed since. Such an item is CloudStack's own hand-over, not a defect:
// HighAvailabilityManagerImpl.scheduleRestart persists it for any VM (cancelWorkItems, a host found
// down), restart() reschedules it restart.retry.interval ahead when fencing fails, and until then
// handlePowerStateReport only postpones the VM's reports. It is written here from the Java, apart
// from the reference's own predicates (impl's HaWorkVO.pending, running), on the rows alone: a
// detector that asked the reference would move its bound with any regression of them. The
// ghost-record invariant gives such a VM restart.retry.interval more (invariant.VM.HAGrace).
func HaRestartHolds(rows []HaWorkRow, updateCount int64) bool {
	for _, w := range rows {
		open := w.Step != "Done" && w.Step != "Cancelled"
		if w.Type == "HA" && open && (w.Taken || w.PrevUpdate == updateCount) {
			return true
		}
	}
	return false
}
