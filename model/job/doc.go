// Package job models async-job status (JobInfo.Status, spec 2.4), the
// async_job.job_status column.
package job
