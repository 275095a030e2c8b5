package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/internal/tier"
)

// hookPost POSTs to a fault hook with token ("" sends no Authorization header) and returns the status
// and body.
func hookPost(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Issue 35 item 5: the hypervisor's --listen hooks and the agent's --faults hook answer 401 without
// the control token (a wrong one too) and act with it; GET /domains, read-only, needs none; the
// server takes an agent's StartupCommand only with the agent key: an agent with a wrong key never
// becomes a host, and the server says why (a WARN line, also in its history).
func TestHooksAndAgentsNeedTheirSecrets(t *testing.T) {
	tier.Need(t, tier.Long) // builds csconform and runs it in real time: a few seconds
	t.Parallel()            // mostly waiting: beside the package's other real-time tests
	dir := t.TempDir()
	bin := buildCSConform(t)
	hist := filepath.Join(dir, "history.jsonl")
	srv, srvOut := startProc(t, bin, "server", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--history", hist)
	addrs, _ := listening(srvOut, "agents", "control")
	agentAddr, base := addrs["agents"], addrs["control"]
	if agentAddr == "" || base == "" {
		t.Fatalf("the server did not say where it listens; stderr:\n%s", srv.stderr.String())
	}

	// the hypervisor's hooks
	_, hvOut := startProc(t, bin, "hypervisor", "--host", "h1", "--socket", filepath.Join(dir, "h1.sock"), "--listen", "127.0.0.1:0")
	var truth string
	for truth == "" && hvOut.Scan() {
		truth, _ = strings.CutPrefix(hvOut.Text(), "hypervisor h1: truth on ")
	}
	if truth == "" {
		t.Fatal("the hypervisor did not say where it listens")
	}
	for _, hook := range []string{"/crash?name=i-2-2-VM", "/guestShutdown?name=i-2-2-VM", "/routerBoot?d=2s"} {
		for _, tok := range []string{"", "wrong-token-0123456789"} {
			if code, body := hookPost(t, truth+hook, tok); code != http.StatusUnauthorized {
				t.Errorf("POST %s with token %q: %d %s, want 401", hook, tok, code, body)
			}
		}
	}
	if code, body := hookPost(t, truth+"/routerBoot?d=2s", testControlToken); code != http.StatusOK {
		t.Errorf("POST /routerBoot with the token: %d %s", code, body)
	}
	if code, body := hookPost(t, truth+"/crash?name=i-2-2-VM", testControlToken); code == http.StatusUnauthorized {
		t.Errorf("POST /crash with the token: %d %s", code, body)
	}
	if resp, err := http.Get(truth + "/domains"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /domains without a token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// the agent's fault hook, on an agent with the right key
	_, agentOut := startProc(t, bin, "agent", "--host", "h1", "--server", agentAddr, "--faults", "127.0.0.1:0")
	var faults string
	for faults == "" && agentOut.Scan() {
		faults, _ = strings.CutPrefix(agentOut.Text(), "agent fault hooks on ")
	}
	if faults == "" {
		t.Fatal("the agent did not say where its fault hooks are")
	}
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		if code, body := hookPost(t, faults+"/delayNextOutOfBand?d=1s", tok); code != http.StatusUnauthorized {
			t.Errorf("POST /delayNextOutOfBand with token %q: %d %s, want 401", tok, code, body)
		}
	}
	if code, body := hookPost(t, faults+"/delayNextOutOfBand?d=1s", testControlToken); code != http.StatusOK {
		t.Errorf("POST /delayNextOutOfBand with the token: %d %s", code, body)
	}

	// an agent with a wrong key: refused, and said so
	startProcEnv(t, []string{control.EnvToken + "=" + testControlToken, control.EnvAgentKey + "=wrong-agent-key-0123456789"},
		bin, "agent", "--host", "h2", "--server", agentAddr)
	poll(t, 15*time.Second, "the server's refusal of h2", func() bool {
		b, _ := os.ReadFile(hist)
		return strings.Contains(string(b), "wrong agent key")
	})
	poll(t, 15*time.Second, "h1 Up", func() bool {
		var hosts []struct{ ID, Status string }
		call(t, base, "listHosts", nil, &hosts)
		return len(hosts) > 0 && hosts[0].ID == "h1" && hosts[0].Status == "Up"
	})
	var hosts []struct{ ID, Status string }
	call(t, base, "listHosts", nil, &hosts)
	for _, h := range hosts {
		if h.ID == "h2" {
			t.Errorf("h2, with a wrong agent key, is a host: %+v", hosts)
		}
	}
}
