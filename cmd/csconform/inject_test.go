package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInjectCLI(t *testing.T) {
	log := filepath.Join(t.TempDir(), "inject.log")
	runCLICases(t, []cliCase{
		{[]string{"inject", "--help"}, 0, "dead man's switch"},
		{[]string{"inject", "cut-link", "--host", "stage-1", "--duration", "1m"}, 2, "--allow-host PATTERN is required"},
		{[]string{"inject", "meteor", "--host", "stage-1", "--allow-host", "*"}, 2, "unknown fault"},
		{[]string{"inject", "agent-stop", "--host", "stage-1", "--allow-host", "stage-*"}, 2, "give --duration"},
		{[]string{"inject", "agent-restart", "--host", "prod-1", "--allow-host", "stage-*", "--audit-log", log, "--yes"}, 2, "not allowlisted"},
		{[]string{"inject", "agent-restart", "--host", "stage-1", "--host", "stage-2", "--allow-host", "stage-*", "--audit-log", log, "--yes"}, 2, "blast radius"},
		// without --yes: the plan, nothing run (ssh to a host that does not exist would fail)
		{[]string{"inject", "cut-link", "--host", "stage-nonexistent.invalid", "--duration", "1m", "--allow-host", "stage-*", "--audit-log", log, "--id", "t1"}, 0, "would run   stage-nonexistent.invalid: iptables -I OUTPUT -p tcp --dport 8250 -m comment --comment csconform-inject-t1 -j DROP"},
		{[]string{"inject", "backdate-network", "--db-host", "stage-db", "--network", "0000-1111", "--by", "25h", "--duration", "10m", "--allow-host", "stage-*", "--allow-network", "0000-*", "--audit-log", log}, 0, "INTERVAL 90000 SECOND"},
	})
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n < 8 || !strings.Contains(string(b), `"action":"refuse"`) || !strings.Contains(string(b), `"action":"dry-run"`) {
		t.Fatalf("audit log (%d lines):\n%s", n, b)
	}
	help := injectUsage()
	for _, w := range []string{"crash-domain", "agent-stop", "agent-restart", "cut-link", "delay-router-boot", "backdate-network", "--allow-host", "--max-targets", "--yes", "Healing"} {
		if !strings.Contains(help, w) {
			t.Errorf("inject --help does not document %s", w)
		}
	}
}

// --local and --yes really run: agent-restart through a fake systemctl on PATH.
func TestInjectLocalReal(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	os.WriteFile(filepath.Join(dir, "systemctl"), []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\n"), 0o755)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(dir, "inject.log")
	runCLICases(t, []cliCase{
		{[]string{"inject", "agent-restart", "--host", "stage-1", "--allow-host", "stage-*", "--local", "--yes", "--audit-log", log}, 0, "applied stage-1: systemctl restart cloudstack-agent: ok"},
	})
	if b, _ := os.ReadFile(marker); string(b) != "restart cloudstack-agent\n" {
		t.Fatalf("systemctl ran with %q", b)
	}
}
