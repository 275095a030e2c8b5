package cloudapi

import (
	"testing"
	"time"
)

// queryAsyncJobResult's completed is the job's removed date, which
// AsyncJobManagerImpl.completeAsyncJob sets when the job finishes (apache/cloudstack
// framework/jobs/.../AsyncJobManagerImpl.java @db36a006; AsyncJobResponse @e65c555a serializes it
// as completed, AsyncJobJoinDaoImpl.newAsyncJobResponse @38dc0458 copies it): absent while the job
// runs, CloudStack's date format once it is done, not before created.
func TestQueryAsyncJobResultCompleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	p := f.deployParams(t, n.Id)
	p.SetStartvm(false)
	d, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.cs.VirtualMachine.StopVirtualMachine(f.cs.VirtualMachine.NewStopVirtualMachineParams(d.Id))
	if err != nil {
		t.Fatal(err)
	}
	for _, jobID := range []string{d.JobID, st.JobID} {
		r := f.wait(t, jobID)
		created, err1 := time.Parse(dateLayout, r.Created)
		completed, err2 := time.Parse(dateLayout, r.Completed)
		if r.Jobstatus != 1 || err1 != nil || err2 != nil || completed.Before(created) || r.Domainpath != "ROOT" {
			t.Fatalf("a finished job: %+v (%v, %v)", r, err1, err2)
		}
	}
	// a job still running has no completed
	j := f.srv.DB.CreateJob("api", "StopVMCmd", "VirtualMachine", 0, f.srv.ID)
	r, err := f.cs.Asyncjob.QueryAsyncJobResult(f.cs.Asyncjob.NewQueryAsyncJobResultParams(f.h.ids.id("job", j.ID)))
	if err != nil || r.Jobstatus != 0 || r.Completed != "" || r.Created == "" {
		t.Fatalf("a running job: %v %+v", err, r)
	}
	_, body := raw(t, f.url, signed("queryAsyncJobResult", testCreds.SecretKey, "jobid", f.h.ids.id("job", j.ID)))
	if _, ok := body["queryasyncjobresultresponse"]["completed"]; ok {
		t.Fatalf("a running job's response has completed: %v", body)
	}
}
