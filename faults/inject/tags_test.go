package inject

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// fakeTags is what CloudStack would say of the targets' tags; reads counts the lookups.
type fakeTags struct {
	vms   map[string][]Tag
	hosts map[string][]string
	err   error
	reads int
}

func (f *fakeTags) InstanceTags(d string) ([]Tag, error) {
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	t, ok := f.vms[d]
	if !ok {
		return nil, fmt.Errorf("CloudStack lists no user instance named %s", d)
	}
	return t, nil
}

func (f *fakeTags) HostTags(h string) ([]string, error) {
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	t, ok := f.hosts[h]
	if !ok {
		return nil, fmt.Errorf("CloudStack lists no Routing host named %s", h)
	}
	return t, nil
}

// A target is allowed by a name pattern or by a tag it carries; one allowed by neither is refused
// with the flag that would allow it; a tag that cannot be read allows nothing.
func TestPolicyTags(t *testing.T) {
	t.Parallel()
	src := func() *fakeTags {
		return &fakeTags{
			vms: map[string][]Tag{
				"i-2-3-VM": {{"env", "staging"}, {"owner", "qa"}},
				"i-2-4-VM": {{"env", "prod"}},
				"i-2-5-VM": nil,
			},
			hosts: map[string][]string{"kvm1": {"chaos", "ssd"}, "kvm2": {"ssd"}, "kvm3": nil},
		}
	}
	crash := func(h, vm string) Spec { return Spec{Fault: Crash, Hosts: []string{h}, VM: vm} }
	restart := func(h string) Spec { return Spec{Fault: AgentRestart, Hosts: []string{h}} }
	cases := []struct {
		name  string
		spec  Spec
		pol   Policy
		err   error  // the tag source fails
		want  string // "" allowed, else words of the refusal
		reads int    // tag lookups
	}{
		{"host by name", restart("stage-1"), Policy{AllowHosts: []string{"stage-*"}, AllowHostTags: []string{"chaos"}}, nil, "", 0},
		{"host by host tag", restart("kvm1"), Policy{AllowHostTags: []string{"chaos"}}, nil, "", 1},
		{"host without the tag", restart("kvm2"), Policy{AllowHosts: []string{"stage-*"}, AllowHostTags: []string{"chaos"}},
			nil, "host:kvm2 is not allowlisted: host kvm2 matches no --allow-host pattern and none of its host tags (ssd) is an --allow-host-tag; allow it with --allow-host kvm2 or --allow-host-tag ssd", 1},
		{"host with no tag", restart("kvm3"), Policy{AllowHostTags: []string{"chaos"}}, nil, "it carries no host tag; allow it with --allow-host kvm3", 1},
		{"host CloudStack does not list", restart("kvm9"), Policy{AllowHostTags: []string{"chaos"}}, nil, "cannot be read (CloudStack lists no Routing host named kvm9)", 1},
		{"host, no tag flags: the refusal names both ways", restart("kvm1"), Policy{AllowHosts: []string{"stage-*"}},
			nil, "allow it with --allow-host kvm1 (or by a CloudStack host tag it carries: --allow-host-tag TAG, with --api)", 0},
		{"instance by tag", crash("kvm1", "i-2-3-VM"), Policy{AllowHostTags: []string{"chaos"}, AllowTags: []Tag{{"env", "staging"}}}, nil, "", 2},
		{"instance by name, host by tag", crash("kvm1", "i-2-4-VM"), Policy{AllowHostTags: []string{"chaos"}, AllowVMs: []string{"i-2-4-*"}, AllowTags: []Tag{{"env", "staging"}}}, nil, "", 1},
		{"instance whose tag has another value", crash("kvm1", "i-2-4-VM"), Policy{AllowHostTags: []string{"chaos"}, AllowTags: []Tag{{"env", "staging"}}},
			nil, "vm:kvm1/i-2-4-VM is not allowlisted: domain i-2-4-VM matches no --allow-vm pattern and none of its tags (env=prod) is an --allow-tag; allow it with --allow-vm i-2-4-VM or --allow-tag env=prod", 2},
		{"instance without tags", crash("kvm1", "i-2-5-VM"), Policy{AllowHosts: []string{"kvm1"}, AllowTags: []Tag{{"env", "staging"}}}, nil, "it carries no tag", 1},
		{"a router has no tags: only its name allows it", crash("kvm1", "r-7-VM"), Policy{AllowHosts: []string{"kvm1"}, AllowTags: []Tag{{"env", "staging"}}},
			nil, "lists no user instance named r-7-VM", 1},
		{"instance allowed by tag on a host allowed by nothing", crash("kvm2", "i-2-3-VM"), Policy{AllowHostTags: []string{"chaos"}, AllowTags: []Tag{{"env", "staging"}}},
			nil, "host kvm2 matches no --allow-host pattern", 1},
		{"instance, no tag flags", crash("kvm1", "i-2-3-VM"), Policy{AllowHosts: []string{"kvm1"}, AllowVMs: []string{"r-*"}},
			nil, "allow it with --allow-vm i-2-3-VM (or by a CloudStack tag it carries: --allow-tag KEY=VALUE, with --api)", 0},
		{"the API fails: nothing is allowed by a tag", crash("kvm1", "i-2-3-VM"), Policy{AllowHosts: []string{"kvm1"}, AllowTags: []Tag{{"env", "staging"}}},
			errors.New("listVirtualMachines: 401"), "its tags cannot be read (listVirtualMachines: 401)", 1},
		{"tags without a source", crash("kvm1", "i-2-3-VM"), Policy{AllowHosts: []string{"kvm1"}, AllowTags: []Tag{{"env", "staging"}}}, nil, "cannot be read without --api", 0},
		{"every step's host is checked by tag too (read once)", Spec{Fault: AgentRestart, Hosts: []string{"kvm1"}, Duration: 1}, Policy{AllowHostTags: []string{"chaos"}}, nil, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Build(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			f := src()
			f.err = c.err
			if c.name != "tags without a source" {
				c.pol.Tags = f
			}
			err = c.pol.Check(p)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("%v, want a refusal saying %q", err, c.want)
			}
			if f.reads != c.reads {
				t.Errorf("%d tag lookups, want %d", f.reads, c.reads)
			}
		})
	}
}

// A refusal by tag executes nothing, even with --yes, and is logged.
func TestTagRefusalRunsNothing(t *testing.T) {
	t.Parallel()
	ex := &fakeExec{}
	in, log, _ := newInjector(t, ex, true)
	in.Policy = Policy{AllowHostTags: []string{"chaos"}, Tags: &fakeTags{hosts: map[string][]string{"kvm2": {"ssd"}}}}
	p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{"kvm2"}})
	if err := in.Run(context.Background(), p); err == nil || !strings.Contains(err.Error(), "--allow-host-tag ssd") {
		t.Fatalf("error: %v", err)
	}
	if len(ex.got()) != 0 {
		t.Fatalf("ran %v", ex.got())
	}
	if rs := readLog(t, log); actions(rs) != "refuse" || !strings.Contains(rs[0].Result, "host tags (ssd)") {
		t.Fatalf("log: %+v", rs)
	}
}

func TestParseTag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"env=staging": "env=staging", "k=": "k=", "a=b=c": "a=b=c", "=v": "", "novalue": ""} {
		tag, err := ParseTag(in)
		if got := tag.String(); (want == "") != (err != nil) || (err == nil && got != want) {
			t.Errorf("ParseTag(%q) = %q, %v", in, got, err)
		}
	}
}

// fakeCloudStack answers listVirtualMachines and listHosts as CloudStack does (tags, hosttags), in
// pages of pagesize, and refuses a wrong API key with 401 as CloudStack does.
func fakeCloudStack(t *testing.T) *httptest.Server {
	vms := []string{
		`{"id":"v1","name":"web1","instancename":"i-2-3-VM","tags":[{"key":"env","value":"staging","resourcetype":"UserVm"}]}`,
		`{"id":"v2","name":"web2","instancename":"i-2-4-VM","tags":[]}`,
	}
	for i := range 600 { // i-2-5-VM is on the second page
		vms = append(vms, fmt.Sprintf(`{"id":"f%d","name":"filler%d","instancename":"i-9-%d-VM","tags":[]}`, i, i, 100+i))
	}
	vms = append(vms, `{"id":"v3","name":"web3","instancename":"i-2-5-VM","tags":[{"key":"env","value":"prod"},{"key":"owner","value":"qa"}]}`)
	hosts := []string{
		`{"id":"h1","name":"kvm1","ipaddress":"10.0.0.1","hosttags":"chaos,ssd"}`,
		`{"id":"h2","name":"kvm2","ipaddress":"10.0.0.2","hosttags":""}`,
		`{"id":"h3","name":"kvm3","ipaddress":"10.0.0.3","hosttags":"gpu"}`,
	}
	page := func(items []string, r *http.Request) (string, int) {
		p, size := 1, 500
		fmt.Sscan(r.URL.Query().Get("page"), &p)
		fmt.Sscan(r.URL.Query().Get("pagesize"), &size)
		lo, hi := min(size*(p-1), len(items)), min(size*p, len(items))
		return strings.Join(items[lo:hi], ","), len(items)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || q.Get("apiKey") != "k" || q.Get("signature") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errorresponse":{"errorcode":401,"errortext":"unable to verify user credentials"}}`)
			return
		}
		switch q.Get("command") {
		case "listVirtualMachines":
			items, n := page(vms, r)
			fmt.Fprintf(w, `{"listvirtualmachinesresponse":{"count":%d,"virtualmachine":[%s]}}`, n, items)
		case "listHosts":
			items, n := page(hosts, r)
			fmt.Fprintf(w, `{"listhostsresponse":{"count":%d,"host":[%s]}}`, n, items)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
}

func TestAPITags(t *testing.T) {
	t.Parallel()
	srv := fakeCloudStack(t)
	defer srv.Close()
	a := APITags{Client: cs.NewClient(srv.URL+"/client/api", "k", "s", false)}
	a.Client.HTTPGETOnly = true
	if tags, err := a.InstanceTags("i-2-5-VM"); err != nil || fmt.Sprint(tags) != "[env=prod owner=qa]" {
		t.Fatalf("i-2-5-VM (on the second page): %v %v", tags, err)
	}
	if tags, err := a.InstanceTags("i-2-4-VM"); err != nil || len(tags) != 0 {
		t.Fatalf("i-2-4-VM: %v %v", tags, err)
	}
	if _, err := a.InstanceTags("r-7-VM"); err == nil || !strings.Contains(err.Error(), "no user instance named r-7-VM") {
		t.Fatalf("r-7-VM: %v", err)
	}
	if tags, err := a.HostTags("kvm1"); err != nil || fmt.Sprint(tags) != "[chaos ssd]" {
		t.Fatalf("kvm1: %v %v", tags, err)
	}
	if tags, err := a.HostTags("10.0.0.3"); err != nil || fmt.Sprint(tags) != "[gpu]" {
		t.Fatalf("10.0.0.3: %v %v", tags, err)
	}
	if tags, err := a.HostTags("kvm2"); err != nil || len(tags) != 0 {
		t.Fatalf("kvm2: %v %v", tags, err)
	}
	if _, err := a.HostTags("kvm9"); err == nil || !strings.Contains(err.Error(), "no Routing host named kvm9") {
		t.Fatalf("kvm9: %v", err)
	}
	// a wrong key: refused, and the error carries neither the key nor the signature
	bad := APITags{Client: cs.NewClient(srv.URL+"/client/api", "wrongkey", "s", false)}
	bad.Client.HTTPGETOnly = true
	_, err := bad.HostTags("kvm1")
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrongkey") || strings.Contains(err.Error(), "signature=") {
		t.Fatalf("wrong key: %v", err)
	}
	// an unreachable API: the URL's query is cut from the error
	down := APITags{Client: cs.NewClient("http://127.0.0.1:1/client/api", "k", "s", false)}
	down.Client.HTTPGETOnly = true
	if _, err := down.InstanceTags("i-2-3-VM"); err == nil || strings.Contains(err.Error(), "apiKey") {
		t.Fatalf("unreachable: %v", err)
	}
}
