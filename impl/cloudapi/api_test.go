package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
)

// A real-time Env with no agents: enough for the API's own behaviour (jobs that need no host).

type testEnv struct{}

func (testEnv) Now() time.Time                  { return time.Now() }
func (testEnv) Sleep(d time.Duration)           { time.Sleep(d) }
func (testEnv) Go(_ string, fn func())          { go fn() }
func (testEnv) NewSignal() impl.Signal          { return &testSignal{ch: make(chan struct{})} }
func (noAgents) Dial(string) (impl.Pipe, error) { return nil, impl.ErrClosed }
func (n noAgents) Accept() (impl.Pipe, error)   { <-n.never; return nil, impl.ErrClosed }

type noAgents struct{ never chan struct{} }

type testSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *testSignal) Fire() { s.once.Do(func() { close(s.ch) }) }
func (s *testSignal) Wait(d time.Duration) bool {
	if d <= 0 {
		<-s.ch
		return true
	}
	select {
	case <-s.ch:
		return true
	case <-time.After(d):
		return false
	}
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Emit(e history.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	j, _ := json.Marshal(e)
	l.b.Write(append(j, '\n'))
}

func (l *logBuf) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *logBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

var testCreds = Credentials{APIKey: "test-api-key-0123", SecretKey: "s3cr3t/Key+with=odd&chars~"}

type fixture struct {
	h   *Handler
	srv *impl.Server
	url string
	log *logBuf
	cs  *cs.CloudStackClient
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg, err := impl.NewConfig(map[string]string{"vm.job.check.interval": "100"})
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuf{}
	env := testEnv{}
	db := impl.NewDB(env, log)
	srv := impl.NewServer("ms1", env, db, cfg, impl.Switches{}, noAgents{never: make(chan struct{})})
	srv.Start()
	h := New(srv, Options{Logf: log.Logf}, testCreds)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	u := ts.URL + "/client/api"
	return &fixture{h: h, srv: srv, url: u, log: log, cs: cs.NewClient(u, testCreds.APIKey, testCreds.SecretKey, false)}
}

// apiErr unpacks cloudstack-go's error text into errorcode, cserrorcode and errortext.
func apiErr(t *testing.T, err error) (int, int, string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	var code, cse int
	var text string
	if _, e := fmt.Sscanf(err.Error(), "CloudStack API error %d (CSExceptionErrorCode: %d):", &code, &cse); e != nil {
		t.Fatalf("not a CloudStack API error: %v", err)
	}
	_, text, _ = strings.Cut(err.Error(), "): ")
	return code, cse, text
}

func (f *fixture) zone(t *testing.T) string {
	t.Helper()
	z, err := f.cs.Zone.ListZones(f.cs.Zone.NewListZonesParams())
	if err != nil || z.Count != 1 {
		t.Fatalf("listZones: %v %+v", err, z)
	}
	return z.Zones[0].Id
}

func (f *fixture) network(t *testing.T, name string) *cs.CreateNetworkResponse {
	t.Helper()
	offs, err := f.cs.NetworkOffering.ListNetworkOfferings(f.cs.NetworkOffering.NewListNetworkOfferingsParams())
	if err != nil || offs.Count != 2 {
		t.Fatalf("listNetworkOfferings: %v %+v", err, offs)
	}
	off := offs.NetworkOfferings[0]
	if off.Ispersistent {
		off = offs.NetworkOfferings[1]
	}
	n, err := f.cs.Network.CreateNetwork(f.cs.Network.NewCreateNetworkParams(name, off.Id, f.zone(t)))
	if err != nil {
		t.Fatalf("createNetwork: %v", err)
	}
	return n
}

func (f *fixture) deployParams(t *testing.T, nets ...string) *cs.DeployVirtualMachineParams {
	t.Helper()
	so, err := f.cs.ServiceOffering.ListServiceOfferings(f.cs.ServiceOffering.NewListServiceOfferingsParams())
	if err != nil || so.Count != 1 {
		t.Fatalf("listServiceOfferings: %v", err)
	}
	tp, err := f.cs.Template.ListTemplates(f.cs.Template.NewListTemplatesParams("executable"))
	if err != nil || tp.Count != 1 {
		t.Fatalf("listTemplates: %v", err)
	}
	p := f.cs.VirtualMachine.NewDeployVirtualMachineParams(so.ServiceOfferings[0].Id, tp.Templates[0].Id, f.zone(t))
	p.SetNetworkids(nets)
	return p
}

// wait polls queryAsyncJobResult through cloudstack-go until the job is done.
func (f *fixture) wait(t *testing.T, jobID string) *cs.QueryAsyncJobResultResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r, err := f.cs.Asyncjob.QueryAsyncJobResult(f.cs.Asyncjob.NewQueryAsyncJobResultParams(jobID))
		if err != nil {
			t.Fatalf("queryAsyncJobResult: %v", err)
		}
		if r.Jobstatus != 0 {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("job %s still running after 30 s", jobID)
	return nil
}

func TestSignMatchesCloudStackGo(t *testing.T) {
	t.Parallel()
	p := url.Values{"command": {"listVirtualMachines"}, "apiKey": {"AbC"}, "response": {"json"}, "name": {"a b*c~d+e/f"}, "keyword": {"Ü"}}
	got := Sign(p, "secret")
	if !signatureOK(p, "secret", got) {
		t.Fatal("own signature refused")
	}
	want := hmacB64("secret", strings.ToLower(cs.EncodeValues(p)))
	if got != want {
		t.Fatalf("Sign = %s, cloudstack-go signs %s", got, want)
	}
	// Java's URLEncoder writes ~ as %7E: a client that follows it is accepted too.
	java := hmacB64("secret", strings.ToLower(strings.ReplaceAll(cs.EncodeValues(p), "~", "%7E")))
	if !signatureOK(p, "secret", java) {
		t.Fatal("a URLEncoder-style signature was refused")
	}
}

func TestEveryCommandParsesInCloudStackGo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	if n.Name != "net1" || n.State != "Allocated" || n.Id == "" || n.Zoneid != f.zone(t) {
		t.Fatalf("createNetwork response: %+v", n)
	}
	ln, err := f.cs.Network.ListNetworks(f.cs.Network.NewListNetworksParams())
	if err != nil || ln.Count != 1 || ln.Networks[0].Id != n.Id {
		t.Fatalf("listNetworks: %v %+v", err, ln)
	}
	p := f.deployParams(t, n.Id)
	p.SetStartvm(false)
	d, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
	if err != nil || d.JobID == "" || d.Id == "" {
		t.Fatalf("deployVirtualMachine: %v %+v", err, d)
	}
	if r := f.wait(t, d.JobID); r.Jobstatus != 1 || r.Jobresultcode != 0 || r.Jobinstanceid != d.Id {
		t.Fatalf("deploy job: %+v", r)
	}
	vmr, _, err := f.cs.VirtualMachine.GetVirtualMachineByID(d.Id)
	if err != nil || vmr.State != "Stopped" || !strings.HasPrefix(vmr.Instancename, "i-2-") || len(vmr.Nic) != 1 || vmr.Nic[0].Networkid != n.Id {
		t.Fatalf("listVirtualMachines id=: %v %+v", err, vmr)
	}
	nics, err := f.cs.Nic.ListNics(f.cs.Nic.NewListNicsParams(d.Id))
	if err != nil || nics.Count != 1 || nics.Nics[0].Networkid != n.Id || nics.Nics[0].Macaddress == "" {
		t.Fatalf("listNics: %v %+v", err, nics)
	}
	vp := f.cs.Volume.NewListVolumesParams()
	vp.SetVirtualmachineid(d.Id)
	vols, err := f.cs.Volume.ListVolumes(vp)
	if err != nil || vols.Count != 1 || vols.Volumes[0].Type != "ROOT" || vols.Volumes[0].Virtualmachineid != d.Id {
		t.Fatalf("listVolumes: %v %+v", err, vols)
	}
	hosts, err := f.cs.Host.ListHosts(f.cs.Host.NewListHostsParams())
	if err != nil || hosts.Count != 0 {
		t.Fatalf("listHosts with no agents: %v %+v", err, hosts)
	}
	cp := f.cs.Configuration.NewListConfigurationsParams()
	cp.SetName("network.gc.wait")
	cfg, err := f.cs.Configuration.ListConfigurations(cp)
	if err != nil || cfg.Count != 1 || cfg.Configurations[0].Value != "600" {
		t.Fatalf("listConfigurations: %v %+v", err, cfg)
	}
	up := f.cs.Configuration.NewUpdateConfigurationParams("network.gc.wait")
	up.SetValue("30")
	u, err := f.cs.Configuration.UpdateConfiguration(up)
	if err != nil || u.Value != "30" || f.srv.Config.Get("network.gc.wait") != "30" {
		t.Fatalf("updateConfiguration: %v %+v", err, u)
	}

	// stop of a Stopped VM succeeds, destroy leaves it Destroyed, expunge removes it
	st, err := f.cs.VirtualMachine.StopVirtualMachine(f.cs.VirtualMachine.NewStopVirtualMachineParams(d.Id))
	if err != nil || st.JobID == "" {
		t.Fatalf("stopVirtualMachine: %v", err)
	}
	r := f.wait(t, st.JobID)
	if r.Jobstatus != 1 {
		t.Fatalf("stop job: %+v", r)
	}
	var res struct {
		VM cs.VirtualMachine `json:"virtualmachine"`
	}
	if err := json.Unmarshal(r.Jobresult, &res); err != nil || res.VM.Id != d.Id || res.VM.State != "Stopped" {
		t.Fatalf("stop job result: %v %s", err, r.Jobresult)
	}
	ds, err := f.cs.VirtualMachine.DestroyVirtualMachine(f.cs.VirtualMachine.NewDestroyVirtualMachineParams(d.Id))
	if err != nil {
		t.Fatalf("destroyVirtualMachine: %v", err)
	}
	if r := f.wait(t, ds.JobID); r.Jobstatus != 1 {
		t.Fatalf("destroy job: %+v", r)
	}
	lp := f.cs.VirtualMachine.NewListVirtualMachinesParams()
	lp.SetState("Destroyed")
	if l, err := f.cs.VirtualMachine.ListVirtualMachines(lp); err != nil || l.Count != 1 {
		t.Fatalf("listVirtualMachines state=Destroyed: %v %+v", err, l)
	}
	// deleteNetwork is refused while a VM on the network is not expunged
	dn, err := f.cs.Network.DeleteNetwork(f.cs.Network.NewDeleteNetworkParams(n.Id))
	if err != nil {
		t.Fatalf("deleteNetwork: %v", err)
	}
	if r := f.wait(t, dn.JobID); r.Jobstatus != 2 || !strings.Contains(string(r.Jobresult), "not all user vms are expunged") {
		t.Fatalf("deleteNetwork with a Destroyed VM on it: %+v %s", r, r.Jobresult)
	}
	ex, err := f.cs.VirtualMachine.ExpungeVirtualMachine(f.cs.VirtualMachine.NewExpungeVirtualMachineParams(d.Id))
	if err != nil {
		t.Fatalf("expungeVirtualMachine: %v", err)
	}
	if r := f.wait(t, ex.JobID); r.Jobstatus != 1 || !strings.Contains(string(r.Jobresult), `"success":true`) {
		t.Fatalf("expunge job: %+v %s", r, r.Jobresult)
	}
	if l, err := f.cs.VirtualMachine.ListVirtualMachines(f.cs.VirtualMachine.NewListVirtualMachinesParams()); err != nil || l.Count != 0 {
		t.Fatalf("an expunged VM is listed: %v %+v", err, l)
	}
	// the expunged VM's id is now unknown: 431
	_, err = f.cs.VirtualMachine.StartVirtualMachine(f.cs.VirtualMachine.NewStartVirtualMachineParams(d.Id))
	if code, cse, text := apiErr(t, err); code != 431 || cse != 9999 || !strings.Contains(text, "Invalid parameter id value="+d.Id) {
		t.Fatalf("start of an expunged VM: %v", err)
	}
	// then the network goes, and is no longer listed or known
	dn, err = f.cs.Network.DeleteNetwork(f.cs.Network.NewDeleteNetworkParams(n.Id))
	if err != nil {
		t.Fatalf("deleteNetwork: %v", err)
	}
	if r := f.wait(t, dn.JobID); r.Jobstatus != 1 || r.Jobinstancetype != "Network" {
		t.Fatalf("deleteNetwork job: %+v %s", r, r.Jobresult)
	}
	if l, err := f.cs.Network.ListNetworks(f.cs.Network.NewListNetworksParams()); err != nil || l.Count != 0 {
		t.Fatalf("a deleted network is listed: %v %+v", err, l)
	}
	_, err = f.cs.Network.DeleteNetwork(f.cs.Network.NewDeleteNetworkParams(n.Id))
	if code, _, _ := apiErr(t, err); code != 431 {
		t.Fatalf("deleteNetwork of a deleted network: %v", err)
	}
}

func TestAsyncJobFailureCarriesErrorCode(t *testing.T) {
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
	ds, err := f.cs.VirtualMachine.DestroyVirtualMachine(f.cs.VirtualMachine.NewDestroyVirtualMachineParams(d.Id))
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, ds.JobID)
	// a Destroyed VM cannot start: the job fails with 530 and a CloudRuntimeException
	s, err := f.cs.VirtualMachine.StartVirtualMachine(f.cs.VirtualMachine.NewStartVirtualMachineParams(d.Id))
	if err != nil || s.JobID == "" {
		t.Fatalf("startVirtualMachine: %v", err)
	}
	r := f.wait(t, s.JobID)
	if r.Jobstatus != 2 || r.Jobresultcode != 530 || r.Jobresulttype != "object" {
		t.Fatalf("failed job: %+v", r)
	}
	var e cs.CSError
	if err := json.Unmarshal(r.Jobresult, &e); err != nil || e.ErrorCode != 530 || e.CSErrorCode != 4250 || !strings.Contains(e.ErrorText, "Destroyed") {
		t.Fatalf("failed job's result: %v %s", err, r.Jobresult)
	}
	// cloudstack-go's own poller reports it as a failure too
	if _, err := f.cs.GetAsyncJobResult(s.JobID, 10); err == nil || !strings.Contains(err.Error(), "530") {
		t.Fatalf("GetAsyncJobResult: %v", err)
	}
}

func TestAsyncClientWaitsForTheJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	ac := cs.NewAsyncClient(f.url, testCreds.APIKey, testCreds.SecretKey, false)
	p := f.deployParams(t, n.Id)
	p.SetStartvm(false)
	d, err := ac.VirtualMachine.DeployVirtualMachine(p)
	if err != nil || d.State != "Stopped" || d.Id == "" {
		t.Fatalf("async deploy: %v %+v", err, d)
	}
	st, err := ac.VirtualMachine.StopVirtualMachine(ac.VirtualMachine.NewStopVirtualMachineParams(d.Id))
	if err != nil || st.State != "Stopped" || st.Id != d.Id {
		t.Fatalf("async stop: %v %+v", err, st)
	}
}

func TestParameterErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	cases := []struct {
		name    string
		call    func() error
		code    int
		cs      int
		mention string
	}{
		{"unknown vm id", func() error {
			_, err := f.cs.VirtualMachine.StartVirtualMachine(f.cs.VirtualMachine.NewStartVirtualMachineParams("1f0c4b3e-0000-5000-8000-000000000000"))
			return err
		}, 431, 9999, "Invalid parameter id value=1f0c4b3e"},
		{"missing id", func() error {
			_, err := f.cs.VirtualMachine.StopVirtualMachine(f.cs.VirtualMachine.NewStopVirtualMachineParams(""))
			return err
		}, 431, 9999, "missing parameter id"},
		{"unknown network in deploy", func() error {
			_, err := f.cs.VirtualMachine.DeployVirtualMachine(f.deployParams(t, n.Id, "nope"))
			return err
		}, 431, 9999, "Invalid parameter networkids value=nope"},
		{"unknown zone", func() error {
			_, err := f.cs.Network.CreateNetwork(f.cs.Network.NewCreateNetworkParams("x", "y", "z"))
			return err
		}, 431, 9999, "Invalid parameter zoneid value=z"},
		{"unknown job", func() error {
			_, err := f.cs.Asyncjob.QueryAsyncJobResult(f.cs.Asyncjob.NewQueryAsyncJobResultParams("nope"))
			return err
		}, 431, 9999, "Invalid parameter jobid"},
		{"unknown configuration", func() error {
			_, err := f.cs.Configuration.UpdateConfiguration(f.cs.Configuration.NewUpdateConfigurationParams("no.such.key"))
			return err
		}, 431, 4350, "doesn't exist"},
		{"bad configuration value", func() error {
			p := f.cs.Configuration.NewUpdateConfigurationParams("ping.interval")
			p.SetValue("soon")
			_, err := f.cs.Configuration.UpdateConfiguration(p)
			return err
		}, 431, 4350, "not a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, cse, text := apiErr(t, c.call())
			if code != c.code || cse != c.cs || !strings.Contains(text, c.mention) {
				t.Fatalf("got %d/%d %q, want %d/%d mentioning %q", code, cse, text, c.code, c.cs, c.mention)
			}
		})
	}
}

// raw sends a hand-made request and returns the status and the decoded body.
func raw(t *testing.T, u string, p url.Values) (int, map[string]map[string]any) {
	t.Helper()
	return rawGet(t, u, p.Encode())
}

func signed(cmd string, secret string, extra ...string) url.Values {
	p := url.Values{"command": {cmd}, "apiKey": {testCreds.APIKey}, "response": {"json"}}
	for i := 0; i+1 < len(extra); i += 2 {
		p.Set(extra[i], extra[i+1])
	}
	p.Set("signature", Sign(p, secret))
	return p
}

func TestSignatureChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	future := time.Now().Add(time.Hour).UTC().Format(ExpiresLayout)
	past := time.Now().Add(-time.Minute).UTC().Format(ExpiresLayout)
	tampered := signed("listConfigurations", testCreds.SecretKey, "name", "ping.interval")
	tampered.Set("name", "wait")
	otherKey := signed("listZones", testCreds.SecretKey)
	otherKey.Set("apiKey", "someone-else")
	otherCase := url.Values{"command": {"listzones"}, "APIKEY": {testCreds.APIKey}, "Response": {"json"}}
	otherCase.Set("SIGNATURE", Sign(otherCase, testCreds.SecretKey))
	noSig := signed("listZones", testCreds.SecretKey)
	noSig.Del("signature")
	cases := []struct {
		name     string
		p        url.Values
		status   int
		respName string
	}{
		{"good", signed("listZones", testCreds.SecretKey), 200, "listzonesresponse"},
		{"lowercase command, names in other cases", otherCase, 200, "listzonesresponse"},
		{"wrong secret", signed("listZones", "not-the-secret"), 401, "listzonesresponse"},
		{"tampered parameter", tampered, 401, "listconfigurationsresponse"},
		{"unknown api key", otherKey, 401, "listzonesresponse"},
		{"no signature", noSig, 401, "listzonesresponse"},
		{"unknown command", signed("rebootEverything", testCreds.SecretKey), 401, "errorresponse"},
		{"v3 not expired", signed("listZones", testCreds.SecretKey, "signatureVersion", "3", "expires", future), 200, "listzonesresponse"},
		{"v3 expired", signed("listZones", testCreds.SecretKey, "signatureVersion", "3", "expires", past), 401, "listzonesresponse"},
		{"v3 without expires", signed("listZones", testCreds.SecretKey, "signatureVersion", "3"), 401, "listzonesresponse"},
		{"expired but not v3", signed("listZones", testCreds.SecretKey, "expires", past), 200, "listzonesresponse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := raw(t, f.url, c.p)
			r, ok := body[c.respName]
			if status != c.status || !ok {
				t.Fatalf("status %d body %v, want %d with %s", status, body, c.status, c.respName)
			}
			if c.status == 401 && (r["errorcode"] != float64(401) || !strings.HasPrefix(r["errortext"].(string), "unable to verify user credentials and/or request signature")) {
				t.Fatalf("401 body: %v", r)
			}
		})
	}
	// cloudstack-go with the wrong secret gets the same 401
	bad := cs.NewClient(f.url, testCreds.APIKey, "wrong", false)
	_, err := bad.Zone.ListZones(bad.Zone.NewListZonesParams())
	if code, _, _ := apiErr(t, err); code != 401 {
		t.Fatalf("wrong secret through cloudstack-go: %v", err)
	}
	// POST (cloudstack-go's deployVirtualMachine) is signed the same way
	form := signed("listZones", testCreds.SecretKey)
	resp, err := http.PostForm(f.url, form)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST: %v %v", err, resp)
	}
	resp.Body.Close()
	// the log says why, and never shows a key or a signature
	log := f.log.String()
	if !strings.Contains(log, "signature does not match") || !strings.Contains(log, "request expired") {
		t.Fatalf("refusals not logged:\n%s", log)
	}
	for _, secret := range []string{testCreds.SecretKey, testCreds.APIKey, Sign(signed("listZones", "not-the-secret"), "x")} {
		if strings.Contains(log, secret) {
			t.Fatalf("the log shows a credential %q:\n%s", secret, log)
		}
	}
}

func TestCredentialsNeverPrintTheSecret(t *testing.T) {
	t.Parallel()
	s := fmt.Sprint(testCreds) + fmt.Sprintf("%v %+v %#v %s %q", testCreds, testCreds, testCreds, testCreds, testCreds)
	if strings.Contains(s, testCreds.SecretKey) {
		t.Fatalf("Credentials print their secret: %s", s)
	}
}

// listRouters and listSystemVms parse in cloudstack-go: a network's router with its guest network
// and NIC, filters by network, and no system VMs.
func TestListRouters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	var nid int64
	for _, x := range f.srv.DB.Networks(nil) {
		nid = x.ID
	}
	r := f.srv.DB.CreateVM("test", "", "DomainRouter", []int64{nid})
	f.srv.DB.SetNetworkRouter(nid, r.ID)
	f.srv.DB.CreateNic(r.ID, nid)
	p := f.cs.Router.NewListRoutersParams()
	p.SetListall(true)
	l, err := f.cs.Router.ListRouters(p)
	if err != nil || l.Count != 1 {
		t.Fatalf("listRouters: %v %+v", err, l)
	}
	got := l.Routers[0]
	if got.Name != r.Name || got.State != "Stopped" || got.Guestnetworkid != n.Id || len(got.Nic) != 1 || got.Nic[0].Networkid != n.Id {
		t.Fatalf("router: %+v", got)
	}
	p.SetNetworkid(n.Id)
	if l, err := f.cs.Router.ListRouters(p); err != nil || l.Count != 1 {
		t.Fatalf("listRouters networkid=: %v %+v", err, l)
	}
	p.SetState("Running")
	if l, err := f.cs.Router.ListRouters(p); err != nil || l.Count != 0 {
		t.Fatalf("listRouters state=Running: %v %+v", err, l)
	}
	s, err := f.cs.SystemVM.ListSystemVms(f.cs.SystemVM.NewListSystemVmsParams())
	if err != nil || s.Count != 0 {
		t.Fatalf("listSystemVms: %v %+v", err, s)
	}
}
