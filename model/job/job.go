package job

// Status is JobInfo.Status; values are the strings stored in the DB.
type Status string

// Job statuses, in the spec's order.
const (
	InProgress Status = "IN_PROGRESS"
	Succeeded  Status = "SUCCEEDED"
	Failed     Status = "FAILED"
	Cancelled  Status = "CANCELLED"
)

// Statuses returns every job status in the spec's order.
func Statuses() []Status { return []Status{InProgress, Succeeded, Failed, Cancelled} }

// Done reports whether the job has finished; a VM work job that is not done
// is a "pending work job" and blocks power-state following for its VM.
func (s Status) Done() bool {
	switch s {
	case Succeeded, Failed, Cancelled:
		return true
	}
	return false
}
