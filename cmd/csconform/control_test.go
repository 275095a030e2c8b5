package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/internal/tier"
)

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
	srv, out := startProcEnv(t, []string{control.EnvToken + "=", control.EnvAgentKey + "=" + testAgentKey}, bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--control-token-file", file)
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
	t.Setenv(control.EnvToken, "")
	runCLICases(t, []cliCase{{[]string{"server", "--listen", "127.0.0.1:99999", "--control", "127.0.0.1:0"}, 2, "agent listener"}})
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// The control endpoint drives everything the server does: an address other than loopback is refused
// (exit 2, before any token is written) unless --control-any-address says so.
func TestControlLoopbackOnly(t *testing.T) {
	t.Setenv(control.EnvToken, "")
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
}
