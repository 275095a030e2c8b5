package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
)

// The control token comes from the environment, else from the file, else it is generated into the
// file (0600) or a new file in the temporary directory; weak or unprintable tokens are refused.
func TestControlTokenSources(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Setenv(envControlToken, "")
	file := filepath.Join(dir, "ctl.token")

	tok, written, err := controlToken(file)
	if err != nil || written != file || len(tok) < 32 {
		t.Fatalf("generated: %q %q %v", tok, written, err)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	if again, w, err := controlToken(file); err != nil || again != tok || w != "" {
		t.Fatalf("read back: %q %q %v, want the generated token", again, w, err)
	}
	tmp, w, err := controlToken("")
	if err != nil || tmp == tok || !strings.HasPrefix(w, dir) {
		t.Fatalf("no file given: %q %q %v", tmp, w, err)
	}
	t.Setenv(envControlToken, "from-the-environment-123")
	if got, w, err := controlToken(file); err != nil || got != "from-the-environment-123" || w != "" {
		t.Fatalf("environment: %q %q %v", got, w, err)
	}
	for _, bad := range []string{"short", "has a space in it, long enough"} {
		t.Setenv(envControlToken, bad)
		if _, _, err := controlToken(""); err == nil || strings.Contains(err.Error(), bad) {
			t.Errorf("token %q: %v (refused, without echoing it)", bad, err)
		}
	}
}

// Every control request needs "Authorization: Bearer TOKEN": none, another scheme or a wrong token
// get 401 with a message that says what to send and never shows a token.
func TestControlEndpointNeedsToken(t *testing.T) {
	const token = "the-right-control-token-42"
	ts := httptest.NewServer(newControl(nil, nil, nil, token))
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

// csconform server with no token given generates one into a 0600 file it names; the endpoint
// refuses requests without it and serves them with it; the token is in no output. Without --control
// the endpoint is on loopback (127.0.0.1:8096; if another process holds that port, the refusal names
// the address it tried).
func TestServerControlTokenAndLoopback(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	dir := t.TempDir()
	bin := buildCSConform(t)
	file := filepath.Join(dir, "control.token")
	srv, out := startProcEnv(t, []string{envControlToken + "=", envAgentKey + "=" + testAgentKey}, bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--control-token-file", file)
	addrs, lines := listening(out, "control")
	base := addrs["control"]
	if base == "" {
		t.Fatalf("no control address; stderr:\n%s", srv.stderr.String())
	}
	if !strings.Contains(strings.Join(lines, "\n"), "control token in "+file) {
		t.Fatalf("the server does not say where the token is:\n%s", strings.Join(lines, "\n"))
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(b))
	for _, c := range []struct {
		token  string
		status int
	}{{"", 401}, {"not-the-token-but-long-enough", 401}, {token, 200}} {
		resp, err := controlGet(base, "listHosts", nil, c.token)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("listHosts with token %v: %d, want %d", c.token != "", resp.StatusCode, c.status)
		}
	}
	var hosts []any
	resp, _ := controlGet(base, "listHosts", nil, token)
	json.NewDecoder(resp.Body).Decode(&hosts)
	resp.Body.Close()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	srv.waitExit(t)
	if strings.Contains(strings.Join(lines, "\n")+srv.stderr.String(), token) {
		t.Fatal("the control token appears in the server's output")
	}

	// the default address
	def, out := startProc(t, bin, "server", "--listen", "127.0.0.1:0")
	got := make(chan string, 1)
	go func() {
		a, _ := listening(out, "control")
		got <- a["control"]
	}()
	select {
	case a := <-got:
		if a != "" {
			if a != "http://127.0.0.1:8096" {
				t.Fatalf("default control address %s, want http://127.0.0.1:8096", a)
			}
			return
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server said nothing")
	}
	if code := def.waitExit(t); code != 2 || !strings.Contains(def.stderr.String(), "127.0.0.1:8096") {
		t.Fatalf("default control address: exit %d, stderr:\n%s", code, def.stderr.String())
	}
}

// A server that cannot start generates no token file.
func TestServerThatCannotStartWritesNoToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	t.Setenv(envControlToken, "")
	runCLICases(t, []cliCase{{[]string{"server", "--listen", "127.0.0.1:99999", "--control", "127.0.0.1:0"}, 2, "agent listener"}})
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
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
	ts := httptest.NewServer(newControl(nil, nil, cfg, token))
	defer ts.Close()
	for _, v := range []string{"0", "-1", "NaN", "1e300"} {
		resp, err := controlGet(ts.URL, "updateConfiguration", url.Values{"name": {"ping.interval"}, "value": {v}}, token)
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

// The control endpoint drives everything the server does: an address other than loopback is refused
// (exit 2, before any token is written) unless --control-any-address says so.
func TestControlLoopbackOnly(t *testing.T) {
	t.Setenv(envControlToken, "")
	t.Setenv("TMPDIR", t.TempDir())
	srv := []string{"server", "--listen", "127.0.0.1:0"}
	runCLICases(t, []cliCase{
		{append(srv, "--control", "0.0.0.0:0"), 2, "--control 0.0.0.0:0 (bound to [::]:"},
		{append(srv, "--control", ":0"), 2, "is not a loopback address"},
		{append(srv, "--control", "[::]:0"), 2, "is not a loopback address"},
	})
	if tokens, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(tokens) > 0 {
		t.Errorf("a refused server left %v", tokens)
	}
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
		if err := checkControlAddr(c.addr, a, c.any); (err != nil) != c.bad {
			t.Errorf("%s (any address %v): %v", c.addr, c.any, err)
		}
	}
}
