package cloudapi

import (
	"fmt"
	"strings"
	"testing"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
)

// configureSimulator, querySimulatorMock and cleanupSimulatorMock as the Java has them
// (apache/cloudstack ConfigureSimulatorCmd@7b29dd99, QuerySimulatorMockCmd@1988400f,
// CleanupSimulatorMockCmd@252e1a73, SimulatorManagerImpl@1510b44f configureSimulator /
// clearSimulatorMock): the same scope and name update one row, query and cleanup of a removed row fail
// with INTERNAL_ERROR, and bad ids are parameter errors. Sent through cloudstack-go's CustomService, as
// the external world sends them.
func TestSimulatorMockAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	zone := f.zone(t)
	call := func(api string, kv ...string) (map[string]any, error) {
		p := &cs.CustomServiceParams{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.SetParam(kv[i], kv[i+1])
		}
		var out map[string]any
		err := f.cs.Custom.(*cs.CustomService).CustomRequest(api, p, &out)
		return out, err
	}
	mock := func(out map[string]any, err error) map[string]any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		m, ok := out["simulatormock"].(map[string]any)
		if !ok {
			t.Fatalf("no simulatormock in %v", out)
		}
		return m
	}
	first := mock(call("configureSimulator", "zoneid", zone, "name", "StartCommand", "value", "wait:1000", "count", "2"))
	if first["id"] != float64(1) || first["zoneid"] != zone || first["name"] != "StartCommand" || first["count"] != float64(2) || first["hostid"] != nil {
		t.Fatalf("configure: %v", first)
	}
	// findByCommand: the same scope and name is the same row, its values and count replaced
	again := mock(call("configureSimulator", "zoneid", zone, "name", "StartCommand", "value", "result:fail"))
	if again["id"] != float64(1) || again["count"] != nil {
		t.Fatalf("reconfigure: %v", again)
	}
	if m := f.srv.DB.Mocks.Active(); len(m) != 1 || m[0].Values != "result:fail" || m[0].Count != nil {
		t.Fatalf("rows: %+v", m)
	}
	global := mock(call("configureSimulator", "name", "StartCommand", "value", "wait:5"))
	if global["id"] != float64(2) || global["zoneid"] != nil {
		t.Fatalf("global: %v", global)
	}
	if q := mock(call("querySimulatorMock", "id", "2")); q["name"] != "StartCommand" {
		t.Fatalf("query: %v", q)
	}
	if out, err := call("cleanupSimulatorMock", "id", "2"); err != nil || out["success"] != true {
		t.Fatalf("cleanup: %v %v", out, err)
	}
	cases := []struct {
		name    string
		api     string
		kv      []string
		code    int
		mention string
	}{
		{"query a removed mock", "querySimulatorMock", []string{"id", "2"}, 530, "Failed to query mock"},
		{"query no id", "querySimulatorMock", nil, 530, "Failed to query mock"},
		{"cleanup twice", "cleanupSimulatorMock", []string{"id", "2"}, 530, "Failed to cleanup mock"},
		{"cleanup unknown", "cleanupSimulatorMock", []string{"id", "99"}, 530, "Failed to cleanup mock"},
		{"id not a number", "querySimulatorMock", []string{"id", "one"}, 431, "Invalid parameter id value=one"},
		{"unknown zone", "configureSimulator", []string{"zoneid", "nope", "name", "StopCommand", "value", "result:fail"}, 431, "Invalid parameter zoneid value=nope"},
		{"unknown host", "configureSimulator", []string{"hostid", "nope", "name", "StopCommand", "value", "result:fail"}, 431, "Invalid parameter hostid value=nope"},
		{"count not a number", "configureSimulator", []string{"name", "StopCommand", "value", "result:fail", "count", "x"}, 431, "Invalid parameter count value=x"},
		{"no name", "configureSimulator", []string{"value", "result:fail"}, 431, "missing parameter name"},
		{"no value", "configureSimulator", []string{"name", "StopCommand"}, 431, "missing parameter value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(c.api, c.kv...)
			code, _, text := apiErr(t, err)
			if code != c.code || !strings.Contains(text, c.mention) {
				t.Fatalf("got %d %q, want %d mentioning %q", code, text, c.code, c.mention)
			}
		})
	}
}

// configureSimulator refuses what mockconfiguration's columns cannot hold (name 255, values and
// json_response 4096 bytes), as MySQL refuses CloudStack's insert, and more than maxMocks live rows:
// 150 mocks of 2 MB once held 615 MB. Updating a row that exists is never refused for the count.
func TestSimulatorMocksAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	call := func(kv ...string) error {
		p := &cs.CustomServiceParams{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.SetParam(kv[i], kv[i+1])
		}
		var out map[string]any
		return f.cs.Custom.(*cs.CustomService).CustomRequest("configureSimulator", p, &out)
	}
	for _, c := range []struct{ key, val, mention string }{
		{"name", strings.Repeat("N", 256), "name is 256 bytes"},
		{"value", "wait:" + strings.Repeat("1", 4096), "value is 4101 bytes"},
		{"jsonresponse", strings.Repeat("{", 4097), "jsonresponse is 4097 bytes"},
	} {
		kv := []string{"name", "StartCommand", "value", "wait:1", c.key, c.val}
		err := call(kv...)
		if err == nil || !strings.Contains(err.Error(), c.mention) || !strings.Contains(err.Error(), "431") {
			t.Errorf("%s: %v", c.key, err)
		}
	}
	for i := range maxMocks {
		if err := call("name", fmt.Sprintf("Command%d", i), "value", "wait:1"); err != nil {
			t.Fatalf("mock %d: %v", i, err)
		}
	}
	if err := call("name", "OneTooMany", "value", "wait:1"); err == nil || !strings.Contains(err.Error(), "cleanupSimulatorMock") {
		t.Fatalf("mock %d: %v", maxMocks+1, err)
	}
	if err := call("name", "Command0", "value", "result:fail"); err != nil {
		t.Fatalf("updating a row at the bound: %v", err)
	}
}
