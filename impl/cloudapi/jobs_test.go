package cloudapi

import (
	"net/url"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/model/job"
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

// An unknown command is refused as CloudStack 4.2x refuses it (verify cites ApiServer.verifyRequest
// @44d54b35 and ApiServlet.processRequestInContext @7f460b58): the command is checked before the
// signature, and the answer is the bad-signature answer, 401 "unable to verify user credentials
// and/or request signature" named errorresponse, with no cserrorcode, signed or not; not the 432 of
// older releases. The text goes on to say that the command is what failed (issue 47: clients that
// call an unserved command first reported bad credentials).
func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	noSig := signed("rebootEverything", testCreds.SecretKey)
	noSig.Del("signature")
	for name, p := range map[string]url.Values{
		"signed":       signed("rebootEverything", testCreds.SecretKey),
		"wrong secret": signed("rebootEverything", "not-the-secret"),
		"unsigned":     noSig,
	} {
		status, body := raw(t, f.url, p)
		r, ok := body["errorresponse"]
		if status != 401 || !ok || len(body) != 1 || r["errorcode"] != float64(401) || r["cserrorcode"] != nil ||
			r["errortext"] != "unable to verify user credentials and/or request signature (csconform's API face does not serve the command \"rebootEverything\": listApis lists what it does; CloudStack 4.22 answers an unknown command with this same 401)" {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}
	// the log says why: the command, not the signature
	if log := f.log.String(); !strings.Contains(log, `refused "rebootEverything"`) || !strings.Contains(log, "unknown command") || strings.Contains(log, "signature does not match") {
		t.Fatalf("log:\n%s", log)
	}
	// a command name carrying a newline cannot forge a log line: it is quoted, and cut
	forged := signed("x\n2026-12-07 INFO STATE host:h1 Up -> Down", testCreds.SecretKey)
	raw(t, f.url, forged)
	if log := f.log.String(); strings.Contains(log, "\n2026-12-07 INFO STATE") {
		t.Fatalf("a client's newline reached the log:\n%s", log)
	}
	// cloudstack-go reports it as a 401
	var out map[string]any
	err := f.cs.Custom.(*cs.CustomService).CustomRequest("rebootEverything", &cs.CustomServiceParams{}, &out)
	if code, cse, _ := apiErr(t, err); code != 401 || cse != 0 {
		t.Fatalf("cloudstack-go: %v", err)
	}
}

// listAsyncJobs lists the jobs still running (listAsyncJobs cites searchForAsyncJobsInternal and
// AsyncJobJoinVO's removed column): a finished job is not listed, keyword matches the command's
// class name, and the list pages.
func TestListAsyncJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	p := f.deployParams(t, n.Id)
	p.SetStartvm(false)
	d, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, d.JobID)
	stop := f.srv.DB.CreateJob("api", "StopVMCmd", "VirtualMachine", 0, f.srv.ID)
	del := f.srv.DB.CreateJob("api", "DeleteNetworkCmd", "Network", 0, f.srv.ID)
	l, err := f.cs.Asyncjob.ListAsyncJobs(f.cs.Asyncjob.NewListAsyncJobsParams())
	if err != nil || l.Count != 2 || l.AsyncJobs[0].JobID != f.h.ids.id("job", stop.ID) || l.AsyncJobs[1].JobID != f.h.ids.id("job", del.ID) {
		t.Fatalf("listAsyncJobs: %v %+v", err, l)
	}
	if j := l.AsyncJobs[0]; j.Cmd != jobCmdClass["StopVMCmd"] || j.Jobstatus != 0 || j.Completed != "" || j.Created == "" {
		t.Fatalf("a running job listed: %+v", j)
	}
	lp := f.cs.Asyncjob.NewListAsyncJobsParams()
	lp.SetKeyword("network.DeleteNetwork")
	if l, err := f.cs.Asyncjob.ListAsyncJobs(lp); err != nil || l.Count != 1 || l.AsyncJobs[0].JobID != f.h.ids.id("job", del.ID) {
		t.Fatalf("listAsyncJobs keyword: %v %+v", err, l)
	}
	lp = f.cs.Asyncjob.NewListAsyncJobsParams()
	lp.SetPage(2)
	lp.SetPagesize(1)
	if l, err := f.cs.Asyncjob.ListAsyncJobs(lp); err != nil || l.Count != 2 || len(l.AsyncJobs) != 1 || l.AsyncJobs[0].JobID != f.h.ids.id("job", del.ID) {
		t.Fatalf("listAsyncJobs page 2: %v %+v", err, l)
	}
	// once done, it is no longer listed, and queryAsyncJobResult has its completion
	f.srv.DB.CompleteJob("test", stop.ID, job.Succeeded, 0, "")
	f.srv.DB.CompleteJob("test", del.ID, job.Failed, 530, "CloudRuntimeException: no")
	if l, err := f.cs.Asyncjob.ListAsyncJobs(f.cs.Asyncjob.NewListAsyncJobsParams()); err != nil || l.Count != 0 {
		t.Fatalf("listAsyncJobs after they finished: %v %+v", err, l)
	}
	if r := f.wait(t, f.h.ids.id("job", del.ID)); r.Jobstatus != 2 || r.Completed == "" {
		t.Fatalf("a failed job: %+v", r)
	}
}
