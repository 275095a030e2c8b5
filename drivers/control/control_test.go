package control

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
)

// The control token comes from the environment, else from the file, else it is generated into the
// file (0600) or a new file in the temporary directory; weak or unprintable tokens are refused.
func TestControlTokenSources(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Setenv(EnvToken, "")
	file := filepath.Join(dir, "ctl.token")

	tok, written, err := Token(file)
	if err != nil || written != file || len(tok) < 32 {
		t.Fatalf("generated: %q %q %v", tok, written, err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	if again, w, err := Token(file); err != nil || again != tok || w != "" {
		t.Fatalf("read back: %q %q %v, want the generated token", again, w, err)
	}
	tmp, w, err := Token("")
	if err != nil || tmp == tok || !strings.HasPrefix(w, dir) {
		t.Fatalf("no file given: %q %q %v", tmp, w, err)
	}
	t.Setenv(EnvToken, "from-the-environment-123")
	if got, w, err := Token(file); err != nil || got != "from-the-environment-123" || w != "" {
		t.Fatalf("environment: %q %q %v", got, w, err)
	}
	for _, bad := range []string{"short", "has a space in it, long enough"} {
		t.Setenv(EnvToken, bad)
		if _, _, err := Token(""); err == nil || strings.Contains(err.Error(), bad) {
			t.Errorf("token %q: %v (refused, without echoing it)", bad, err)
		}
	}
}

// Every control request needs "Authorization: Bearer TOKEN": none, another scheme or a wrong token
// get 401 with a message that says what to send and never shows a token.
func TestControlEndpointNeedsToken(t *testing.T) {
	const token = "the-right-control-token-42"
	ts := httptest.NewServer(Handler(nil, nil, nil, token))
	defer ts.Close()
	cases := []struct {
		name, auth string
		status     int
		mention    string
	}{
		{"no token", "", 401, "no control token"},
		{"basic auth", "Basic dXNlcjpwYXNz", 401, "Authorization: Bearer"},
		{"wrong token", "Bearer the-wrong-control-token-4", 401, "wrong control token"},
		{"token with a suffix", "Bearer " + token + "x", 401, "wrong control token"},
		{"the token", "Bearer " + token, 200, "/listHosts"},
		{"the token, scheme in lower case", "bearer " + token, 200, "/listHosts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+"/", nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.mention) {
				t.Fatalf("%d %s, want %d mentioning %q", resp.StatusCode, b, c.status, c.mention)
			}
			if c.status == 401 && (strings.Contains(string(b), token) || strings.Contains(string(b), "wrong-control-token") || resp.Header.Get("WWW-Authenticate") == "") {
				t.Fatalf("401 shows a token or lacks WWW-Authenticate: %s %v", b, resp.Header)
			}
		})
	}
	// every command, not only the listing
	resp, err := http.Get(ts.URL + "/updateConfiguration?name=ping.interval&value=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("updateConfiguration without a token: %d", resp.StatusCode)
	}
}

// The running server refuses, through its control endpoint, a configuration value that would make a
// periodic task spin (issue 16: updateConfiguration?name=ping.interval&value=0 was accepted), with the
// key and its range, and keeps the value it had.
func TestControlRefusesConfigOutOfRange(t *testing.T) {
	const token = "control-config-token"
	cfg, err := impl.NewConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(Handler(nil, nil, cfg, token))
	defer ts.Close()
	for _, v := range []string{"0", "-1", "NaN", "1e300"} {
		resp, err := get(ts.URL, "updateConfiguration", url.Values{"name": {"ping.interval"}, "value": {v}}, token)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "ping.interval accepts 1..86400") {
			t.Errorf("value %s: %d %s", v, resp.StatusCode, body)
		}
	}
	if got := cfg.Get("ping.interval"); got != "60" {
		t.Errorf("ping.interval is now %s", got)
	}
}

// get sends a control command with token ("" sends no Authorization header), bypassing the client:
// the status and body as the server wrote them.
func get(base, cmd string, params url.Values, token string) (*http.Response, error) {
	req, err := http.NewRequest("GET", base+"/"+cmd+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return http.DefaultClient.Do(req)
}

// The control endpoint drives everything the server does: an address other than loopback is refused
// unless the operator says so (csconform server --control-any-address).
func TestCheckAddrLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		addr     string
		any, bad bool
	}{
		{"127.0.0.1:8096", false, false},
		{"127.0.0.2:8096", false, false},
		{"[::1]:8096", false, false},
		{"0.0.0.0:8096", false, true},
		{"[::]:8096", false, true},
		{"10.1.2.3:8096", false, true},
		{"0.0.0.0:8096", true, false},
		{"10.1.2.3:8096", true, false},
	} {
		a, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckAddr(c.addr, a, c.any); (err != nil) != c.bad {
			t.Errorf("%s (any address %v): %v", c.addr, c.any, err)
		}
	}
}

// The client the drivers use speaks the server's protocol: Call with the token reaches every
// command and decodes its answer, an error the endpoint answers comes back as an *APIError with its
// message, and a call without the token or with another is refused.
func TestClientDrivesHandler(t *testing.T) {
	const token = "the-client-test-control-token"
	cfg, err := impl.NewConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	env := live.NewEnv()
	defer env.Close()
	ln, err := live.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	db := impl.NewDB(env, nil)
	ts := httptest.NewServer(Handler(impl.NewServer("ms1", env, db, cfg, impl.Switches{}, ln), db, cfg, token))
	defer ts.Close()
	ctx := context.Background()

	var list map[string]string
	if err := Call(ctx, ts.URL, token, "", nil, &list); err != nil || list["/deployVirtualMachine"] == "" {
		t.Fatalf("the listing: %v %v", list, err)
	}
	var nw struct{ ID int64 }
	if err := Call(ctx, ts.URL, token, "createNetwork", url.Values{"name": {"n1"}}, &nw); err != nil || nw.ID == 0 {
		t.Fatalf("createNetwork: %+v %v", nw, err)
	}
	var nets []struct{ ID int64 }
	if err := Call(ctx, ts.URL, token, "listNetworks", nil, &nets); err != nil || len(nets) != 1 || nets[0].ID != nw.ID {
		t.Fatalf("listNetworks: %+v %v", nets, err)
	}
	var set map[string]string
	if err := Call(ctx, ts.URL, token, "updateConfiguration", url.Values{"name": {"ping.interval"}, "value": {"30"}}, &set); err != nil || set["value"] != "30" {
		t.Fatalf("updateConfiguration: %v %v", set, err)
	}
	var api *APIError
	if err := Call(ctx, ts.URL, token, "startVirtualMachine", url.Values{"id": {"99"}}, nil); !errors.As(err, &api) || api.Msg != "no virtual machine with id 99" {
		t.Fatalf("an unknown VM: %v", err)
	}
	if err := Call(ctx, ts.URL, "", "listHosts", nil, nil); !errors.As(err, &api) || !strings.Contains(api.Msg, "no control token") {
		t.Fatalf("no token: %v", err)
	}
	if err := Call(ctx, ts.URL, "another-control-token-0123", "listHosts", nil, nil); !errors.As(err, &api) || api.Msg != "wrong control token" {
		t.Fatalf("another token: %v", err)
	}
}
