package cloudapi

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// tenVMs deploys ten Stopped VMs (startvm=false) on one network and destroys the last; it returns
// their ids in id order and names.
func (f *fixture) tenVMs(t *testing.T) (ids, names []string) {
	t.Helper()
	n := f.network(t, "net1")
	for range 10 {
		p := f.deployParams(t, n.Id)
		p.SetStartvm(false)
		d, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
		if err != nil {
			t.Fatal(err)
		}
		f.wait(t, d.JobID)
		ids = append(ids, d.Id)
	}
	ds, err := f.cs.VirtualMachine.DestroyVirtualMachine(f.cs.VirtualMachine.NewDestroyVirtualMachineParams(ids[9]))
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, ds.JobID)
	l, err := f.cs.VirtualMachine.ListVirtualMachines(f.cs.VirtualMachine.NewListVirtualMachinesParams())
	if err != nil || l.Count != 10 {
		t.Fatalf("listVirtualMachines: %v %+v", err, l)
	}
	for i, v := range l.VirtualMachines {
		if v.Id != ids[i] {
			t.Fatalf("listVirtualMachines is not in id order: %d is %s, deployed %s", i, v.Id, ids[i])
		}
		names = append(names, v.Name)
	}
	return ids, names
}

// listed sends a signed listVirtualMachines and returns the status, the response and the ids in it.
func (f *fixture) listed(t *testing.T, kv ...string) (int, map[string]any, []string) {
	t.Helper()
	status, body := raw(t, f.url, signed("listVirtualMachines", testCreds.SecretKey, kv...))
	r := body["listvirtualmachinesresponse"]
	var ids []string
	if vms, ok := r["virtualmachine"].([]any); ok {
		for _, v := range vms {
			ids = append(ids, v.(map[string]any)["id"].(string))
		}
	}
	return status, r, ids
}

// Paging is BaseListCmd's (page.go cites the Java): page is 1-based, pagesize is required with it
// and it with pagesize (but pagesize=-1, all), at most 500; count is the number of matches before
// paging; a page past the end has the count and no items.
func TestListPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids, _ := f.tenVMs(t)
	cases := []struct {
		name   string
		kv     []string
		status int
		cs     int // cserrorcode of a refusal
		text   string
		count  int // the count in the response, 0: none
		want   []string
	}{
		{"no paging", nil, 200, 0, "", 10, ids},
		{"first page", []string{"page", "1", "pagesize", "2"}, 200, 0, "", 10, ids[:2]},
		{"third page", []string{"page", "3", "pagesize", "3"}, 200, 0, "", 10, ids[6:9]},
		{"last, short page", []string{"page", "4", "pagesize", "3"}, 200, 0, "", 10, ids[9:]},
		{"past the end", []string{"page", "6", "pagesize", "2"}, 200, 0, "", 10, nil},
		{"page 0 is the first", []string{"page", "0", "pagesize", "3"}, 200, 0, "", 10, ids[:3]},
		{"pagesize -1 is all", []string{"pagesize", "-1"}, 200, 0, "", 10, ids},
		{"pagesize 0", []string{"page", "1", "pagesize", "0"}, 200, 0, "", 10, nil},
		{"the maximum", []string{"page", "1", "pagesize", "500"}, 200, 0, "", 10, ids},
		{"paging after the filters", []string{"state", "Stopped", "page", "2", "pagesize", "5"}, 200, 0, "", 9, ids[5:9]},
		{"pagesize without page", []string{"pagesize", "2"}, 431, 9999, `"page" parameter is required when "pagesize" is specified`, 0, nil},
		{"page without pagesize", []string{"page", "1"}, 431, 9999, `"pagesize" parameter is required when "page" is specified`, 0, nil},
		{"above the maximum", []string{"page", "1", "pagesize", "501"}, 431, 4350, "Page size can't exceed max allowed page size value: 500", 0, nil},
		{"page with pagesize -1", []string{"page", "1", "pagesize", "-1"}, 431, 4350, "Can't specify page parameter when pagesize is -1 (Unlimited)", 0, nil},
		{"pagesize not a number", []string{"page", "1", "pagesize", "two"}, 431, 9999, "Unable to execute API command listvirtualmachines due to invalid value two for parameter pagesize", 0, nil},
		{"page not an integer", []string{"page", "99999999999", "pagesize", "2"}, 431, 9999, "Unable to execute API command listvirtualmachines due to invalid value 99999999999 for parameter page", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, r, got := f.listed(t, c.kv...)
			if status != c.status {
				t.Fatalf("status %d, want %d: %v", status, c.status, r)
			}
			if c.status != 200 {
				if r["errorcode"] != float64(c.status) || r["cserrorcode"] != float64(c.cs) || r["errortext"] != c.text {
					t.Fatalf("refusal %v, want %d/%d %q", r, c.status, c.cs, c.text)
				}
				return
			}
			if n, _ := r["count"].(float64); int(n) != c.count || !slices.Equal(got, c.want) {
				t.Fatalf("count %v ids %v, want %d %v", r["count"], got, c.count, c.want)
			}
		})
	}
	// through cloudstack-go: its page and pagesize, and the count it parses
	p := f.cs.VirtualMachine.NewListVirtualMachinesParams()
	p.SetPage(2)
	p.SetPagesize(4)
	l, err := f.cs.VirtualMachine.ListVirtualMachines(p)
	if err != nil || l.Count != 10 || len(l.VirtualMachines) != 4 || l.VirtualMachines[0].Id != ids[4] {
		t.Fatalf("cloudstack-go page 2 of 4: %v %+v", err, l)
	}
	p.SetPage(9)
	if l, err := f.cs.VirtualMachine.ListVirtualMachines(p); err != nil || l.Count != 10 || len(l.VirtualMachines) != 0 {
		t.Fatalf("cloudstack-go past the end: %v %+v", err, l)
	}
	// every list command pages (and refuses pagesize without page)
	for _, c := range f.h.Commands() {
		cmd := f.h.cmds[strings.ToLower(c)]
		if !cmd.list || slices.ContainsFunc(cmd.params, func(p param) bool { return p.required }) {
			continue
		}
		status, body := raw(t, f.url, signed(c, testCreds.SecretKey, "pagesize", "1"))
		if r := body[strings.ToLower(c)+"response"]; status != 431 || r["errortext"] != `"page" parameter is required when "pagesize" is specified` {
			t.Errorf("%s pagesize=1: %d %v", c, status, body)
		}
	}
	status, body := raw(t, f.url, signed("listZones", testCreds.SecretKey, "page", "2", "pagesize", "1"))
	if r := body["listzonesresponse"]; status != 200 || r["count"] != float64(1) || r["zone"] != nil {
		t.Fatalf("listZones page 2: %d %v", status, body)
	}
}

// name and keyword on listVirtualMachines are QueryManagerImpl.searchForUserVMsInternal's (cited at
// listVMs): name exact, keyword LIKE '%keyword%' on the names and addresses or equal to the state,
// both ignoring case; state=present is all but Destroyed and Expunging.
func TestListVirtualMachinesFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids, names := f.tenVMs(t)
	cases := []struct {
		name string
		kv   []string
		want []string
	}{
		{"name", []string{"name", names[3]}, ids[3:4]},
		{"name ignores case", []string{"name", strings.ToUpper(names[3])}, ids[3:4]},
		{"name is not a pattern", []string{"name", names[3][:4]}, nil},
		{"keyword in the name", []string{"keyword", "-vm"}, ids},
		{"keyword as the whole name", []string{"keyword", names[5]}, ids[5:6]},
		{"keyword's % is a wildcard", []string{"keyword", "i-2-%" + strings.TrimPrefix(names[5], "i-2-")}, ids[5:6]},
		{"keyword is the state", []string{"keyword", "destroyed"}, ids[9:]},
		{"keyword part of the state", []string{"keyword", "destroy"}, nil},
		{"keyword and name", []string{"keyword", "stopped", "name", names[0]}, ids[:1]},
		{"state present", []string{"state", "present"}, ids[:9]},
		{"state", []string{"state", "Destroyed"}, ids[9:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, r, got := f.listed(t, c.kv...)
			if status != 200 || !slices.Equal(got, c.want) {
				t.Fatalf("%d %v: %v, want %v", status, r, got, c.want)
			}
			if n, _ := r["count"].(float64); int(n) != len(c.want) {
				t.Fatalf("count %v, want %d", r["count"], len(c.want))
			}
		})
	}
	// cloudstack-go's courtesy helpers: by name, and by keyword
	v, n, err := f.cs.VirtualMachine.GetVirtualMachineByName(names[2])
	if err != nil || n != 1 || v.Id != ids[2] {
		t.Fatalf("GetVirtualMachineByName(%s): %v %d %+v", names[2], err, n, v)
	}
	p := f.cs.VirtualMachine.NewListVirtualMachinesParams()
	p.SetKeyword(names[7])
	if l, err := f.cs.VirtualMachine.ListVirtualMachines(p); err != nil || l.Count != 1 || l.VirtualMachines[0].Id != ids[7] {
		t.Fatalf("keyword through cloudstack-go: %v %+v", err, l)
	}
}

// listApis answers ApiDiscoveryService's shape (commands.go cites it) with every command the face
// serves, and cloudstack-go parses it.
func TestListApis(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l, err := f.cs.APIDiscovery.ListApis(f.cs.APIDiscovery.NewListApisParams())
	if err != nil || l.Count != len(f.h.Commands()) || len(l.Apis) != l.Count {
		t.Fatalf("listApis: %v %d apis, %d commands", err, l.Count, len(f.h.Commands()))
	}
	byName := map[string]*cs.Api{}
	for _, a := range l.Apis {
		byName[a.Name] = a
		if a.Description == "" {
			t.Errorf("%s has no description", a.Name)
		}
	}
	for _, c := range f.h.Commands() {
		if byName[c] == nil {
			t.Errorf("listApis does not list %s", c)
		}
	}
	params := func(a *cs.Api) string {
		var out []string
		for _, p := range a.Params {
			out = append(out, fmt.Sprintf("%s:%s:%v", p.Name, p.Type, p.Required))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		name   string
		async  bool
		params string
	}{
		{"deployVirtualMachine", true, "displayname:string:false hostid:uuid:false name:string:false networkids:list:false serviceofferingid:uuid:true startvm:boolean:false templateid:uuid:true zoneid:uuid:true"},
		{"listZones", false, "id:uuid:false keyword:string:false page:integer:false pagesize:integer:false"},
		{"queryAsyncJobResult", false, "jobid:uuid:true"},
		{"listApis", false, "name:string:false"},
	} {
		a := byName[c.name]
		if a == nil || a.Isasync != c.async || params(a) != c.params {
			t.Errorf("%s: %+v params %q, want async %v params %q", c.name, a, params(a), c.async, c.params)
		}
	}
	p := f.cs.APIDiscovery.NewListApisParams()
	p.SetName("stopVirtualMachine")
	if l, err := f.cs.APIDiscovery.ListApis(p); err != nil || l.Count != 1 || l.Apis[0].Name != "stopVirtualMachine" || !l.Apis[0].Isasync {
		t.Fatalf("listApis name=stopVirtualMachine: %v %+v", err, l)
	}
	// ListApisCmd.execute: no such api is a ServerApiException(INTERNAL_ERROR)
	p.SetName("rebootEverything")
	_, err = f.cs.APIDiscovery.ListApis(p)
	if code, cse, text := apiErr(t, err); code != 530 || cse != 9999 || text != "Api Discovery plugin was unable to find an api by that name or process any apis" {
		t.Fatalf("listApis of an unknown name: %v", err)
	}
}
