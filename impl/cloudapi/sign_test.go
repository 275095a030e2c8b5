package cloudapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
)

// rawGet sends a query string exactly as written (no re-encoding) and returns the status and body.
func rawGet(t *testing.T, u, rawQuery string) (int, map[string]map[string]any) {
	t.Helper()
	resp, err := http.Get(u + "?" + rawQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return resp.StatusCode, m
}

// withSignature appends the signature a client holding the secret made for the parameters p.
func withSignature(rawQuery string, p url.Values) string {
	return rawQuery + "&signature=" + url.QueryEscape(Sign(p, testCreds.SecretKey))
}

// The string CloudStack signs is built by ApiServer.verifyRequest
// (server/src/main/java/com/cloud/api/ApiServer.java): the parameter names as ApiServlet.utf8Fixup
// decoded them, sorted (Collections.sort), each as name=URLEncoder.encode(value) with '+' as %20,
// joined by '&', lowercased. The names are not encoded, so a name holding '=' or '&' after decoding
// makes the same text as two parameters: `response%3Djson%26signatureVersion=3` signs like
// `response=json&signatureVersion=3`, yet no signatureVersion reaches the expires check (which
// verifyRequest makes only for "3".equals(signatureVersion)). Such names are refused here, and so are
// names given twice (CloudStack's names are case-sensitive, the reference server's are not:
// command=listZones&COMMAND=listHosts would pick one at random).
func TestSignedRequestNamesAreUnambiguous(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.network(t, "net1")
	p := f.deployParams(t, n.Id)
	p.SetStartvm(false)
	vm, err := f.cs.VirtualMachine.DeployVirtualMachine(p)
	if err != nil {
		t.Fatal(err)
	}
	dayOld := time.Now().Add(-24 * time.Hour).UTC().Format(ExpiresLayout)
	future := time.Now().Add(time.Hour).UTC().Format(ExpiresLayout)
	destroy := func(expires string) url.Values {
		return url.Values{"apiKey": {testCreds.APIKey}, "command": {"destroyVirtualMachine"}, "expires": {expires},
			"id": {vm.Id}, "response": {"json"}, "signatureVersion": {"3"}}
	}
	head := func(expires string) string {
		return "apiKey=" + testCreds.APIKey + "&command=destroyVirtualMachine&expires=" + url.QueryEscape(expires) + "&id=" + vm.Id
	}
	// the day-old destroy as its client sent it, and the same text with two parameters made one name
	asSigned := withSignature(head(dayOld)+"&response=json&signatureVersion=3", destroy(dayOld))
	replay := withSignature(head(dayOld)+"&response%3Djson%26signatureVersion=3", destroy(dayOld))
	zones := url.Values{"apiKey": {testCreds.APIKey}, "command": {"listZones"}, "response": {"json"}}
	caseDup := url.Values{"apiKey": {testCreds.APIKey}, "command": {"listZones"}, "COMMAND": {"listHosts"}, "response": {"json"}}
	cases := []struct {
		name    string
		query   string
		status  int
		mention string
	}{
		{"replay: expired destroy with signatureVersion hidden in a name", replay, 431, "may not contain '=' or '&'"},
		{"expired destroy as signed", asSigned, 401, "unable to verify"},
		{"'&' in a name", withSignature("apiKey="+testCreds.APIKey+"&command=listZones&response%26x=json", url.Values{"apiKey": {testCreds.APIKey}, "command": {"listZones"}, "response&x": {"json"}}), 431, "may not contain '=' or '&'"},
		{"names differing only in case, both signed", withSignature("apiKey="+testCreds.APIKey+"&command=listZones&COMMAND=listHosts&response=json", caseDup), 431, "more than once"},
		{"a name twice", withSignature("apiKey="+testCreds.APIKey+"&command=listZones&response=json&response=xml", zones), 431, "more than once"},
		{"a name that is not printable ASCII", withSignature("apiKey="+testCreds.APIKey+"&command=listZones&response=json&%C5%BFignature=x", zones), 431, "printable ASCII"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := rawGet(t, f.url, c.query)
			var r map[string]any
			for _, r = range body {
			}
			text, _ := r["errortext"].(string)
			if status != c.status || r["errorcode"] != float64(c.status) || !strings.Contains(text, c.mention) {
				t.Fatalf("status %d body %v, want %d mentioning %q", status, body, c.status, c.mention)
			}
		})
	}
	if j := f.srv.DB.Jobs(func(j *impl.JobVO) bool { return j.Cmd == "DestroyVMCmd" }); len(j) != 0 {
		t.Fatalf("a refused request destroyed the VM: %+v", j[0])
	}
	// the same destroy, signed and unexpired, still runs; and cloudstack-go still gets through
	status, body := rawGet(t, f.url, withSignature(head(future)+"&response=json&signatureVersion=3", destroy(future)))
	if status != 200 || body["destroyvirtualmachineresponse"]["jobid"] == nil {
		t.Fatalf("signed, unexpired destroy: %d %v", status, body)
	}
	if z, err := f.cs.Zone.ListZones(f.cs.Zone.NewListZonesParams()); err != nil || z.Count != 1 {
		t.Fatalf("cloudstack-go: %v %+v", err, z)
	}
	log := f.log.String()
	if !strings.Contains(log, "more than once") || !strings.Contains(log, "may not contain") {
		t.Fatalf("refusals not logged:\n%s", log)
	}
	// a name that swallowed other parameters is shown only up to its first '=' or '&'
	status, body = rawGet(t, f.url, "command%3DlistZones%26apiKey%3D"+testCreds.APIKey+"=x")
	if text := body["errorresponse"]["errortext"]; status != 431 || !strings.Contains(fmt.Sprint(text), `"command"...`) {
		t.Fatalf("%d %v", status, body)
	}
	if strings.Contains(f.log.String()+fmt.Sprint(body), testCreds.APIKey) {
		t.Fatalf("an apiKey inside a refused name is shown:\n%s%v", f.log.String(), body)
	}
}
