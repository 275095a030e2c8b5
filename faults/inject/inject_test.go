package inject

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeExec records every command; fail makes the command whose text contains it fail.
type fakeExec struct {
	mu    sync.Mutex
	calls []string
	fail  string
	// failOut is the output of the failing command (default "boom")
	failOut string
	ran     chan struct{} // gets one value per call, if set
	// resolve is what ssh -G would say of a host (none: the host itself, as root on port 22)
	resolve    map[string]Endpoint
	resolveErr error
}

func (f *fakeExec) Resolve(_ context.Context, host string) (Endpoint, error) {
	if f.resolveErr != nil {
		return Endpoint{}, f.resolveErr
	}
	if e, ok := f.resolve[host]; ok {
		return e, nil
	}
	return Endpoint{HostName: strings.ToLower(host), User: "root", Port: "22"}, nil
}

func (f *fakeExec) Run(_ context.Context, host string, argv []string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := host + ": " + strings.Join(argv, " ")
	f.calls = append(f.calls, c)
	if f.ran != nil {
		select {
		case f.ran <- struct{}{}:
		default:
		}
	}
	if f.fail != "" && strings.Contains(c, f.fail) {
		if f.failOut != "" {
			return f.failOut, errors.New("exit status 1")
		}
		return "boom", errors.New("exit status 1")
	}
	return "", nil
}

func (f *fakeExec) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func readLog(t *testing.T, name string) []Record {
	t.Helper()
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []Record
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if r.Time.IsZero() || r.ID == "" || r.Fault == "" {
			t.Fatalf("log record without time, id or fault: %+v", r)
		}
		out = append(out, r)
	}
	return out
}

func actions(rs []Record) string {
	var a []string
	for _, r := range rs {
		a = append(a, r.Action)
	}
	return strings.Join(a, ",")
}

func newInjector(t *testing.T, ex Executor, yes bool) (*Injector, string, *bytes.Buffer) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "inject.log")
	l, err := OpenLog(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var out bytes.Buffer
	return &Injector{Exec: ex, Log: l, Out: &out, Yes: yes,
		Policy: Policy{AllowHosts: []string{"stage-*"}, AllowVMs: []string{"i-2-*", "r-*"}, AllowNetworks: []string{"0000*"}}}, name, &out
}

func TestBuild(t *testing.T) {
	t.Parallel()
	bad := []Spec{
		{Fault: "meteor", Hosts: []string{"h"}},
		{Fault: Crash, Hosts: []string{"h"}},                                                 // no --vm
		{Fault: Crash, Hosts: []string{"h"}, VM: "i-2-3-VM; rm -rf /"},                       // not a name
		{Fault: Crash, Hosts: []string{"h"}, VM: "i-2-3-VM", Duration: time.Second},          // instantaneous
		{Fault: Disconnect, Hosts: []string{"h"}},                                            // lasts: needs --duration
		{Fault: AgentRestart, Hosts: []string{"h$(reboot)"}, Duration: time.Second},          // not a name
		{Fault: SlowRouterBoot, Hosts: []string{"h"}, VM: "i-2-3-VM", Duration: time.Second}, // not a router
		{Fault: Backdate, Hosts: []string{"db"}, Network: "x' OR 1=1", Duration: time.Second, By: time.Hour},
		{Fault: AgentRestart},
	}
	for _, s := range bad {
		if _, err := Build(s); err == nil {
			t.Errorf("Build(%+v) accepted", s)
		}
	}
	p, err := Build(Spec{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Apply) != 3 || len(p.Heal) != 2 || !strings.Contains(p.Apply[0].String(), "systemd-run") ||
		!strings.Contains(p.Apply[1].String(), "iptables -I OUTPUT -p tcp --dport 8250 -m comment --comment csconform-inject-t1 -j DROP") ||
		!strings.Contains(p.Heal[0].String(), "iptables -D OUTPUT -p tcp --dport 8250 -m comment --comment csconform-inject-t1 -j DROP") {
		t.Fatalf("cut-link plan: %+v", p)
	}
	for _, k := range Kinds {
		if k.Doc == "" || k.Heal == "" || k.Targets == "" {
			t.Errorf("fault %s is not documented", k.Name)
		}
	}
}

// Without --yes nothing runs: the plan is printed and logged.
func TestDryRunExecutesNothing(t *testing.T) {
	t.Parallel()
	for _, s := range []Spec{
		{Fault: Crash, Hosts: []string{"stage-1"}, VM: "i-2-3-VM"},
		{Fault: AgentRestart, Hosts: []string{"stage-1"}, Duration: time.Hour},
		{Fault: AgentRestart, Hosts: []string{"stage-1"}},
		{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: time.Hour},
		{Fault: SlowRouterBoot, Hosts: []string{"stage-1"}, VM: "r-7-VM", Duration: time.Hour},
		{Fault: Backdate, Hosts: []string{"stage-db"}, Network: "00000000-aaaa", Duration: time.Hour, By: 24 * time.Hour},
	} {
		t.Run(s.Fault, func(t *testing.T) {
			ex := &fakeExec{}
			in, log, out := newInjector(t, ex, false)
			p, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Run(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if len(ex.got()) != 0 {
				t.Fatalf("a dry run executed %v", ex.got())
			}
			if !strings.Contains(out.String(), "DRY RUN") || !strings.Contains(out.String(), p.Apply[0].String()) {
				t.Fatalf("the dry run does not show what it would do:\n%s", out)
			}
			rs := readLog(t, log)
			if len(rs) != 1+len(p.Apply)+len(p.Heal)+len(p.Disarm) || rs[0].Action != "plan" || rs[1].Action != "dry-run" {
				t.Fatalf("log: %s", actions(rs))
			}
		})
	}
}

// A target outside the allowlist, or too many targets, is refused before anything runs, even with --yes.
func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec Spec
		max  int
		want string
	}{
		{Spec{Fault: AgentRestart, Hosts: []string{"prod-1"}}, 1, "host:prod-1 is not allowlisted"},
		{Spec{Fault: Crash, Hosts: []string{"stage-1"}, VM: "s-1-VM"}, 1, "vm:stage-1/s-1-VM is not allowlisted"},
		{Spec{Fault: Crash, Hosts: []string{"prod-1"}, VM: "i-2-3-VM"}, 1, "not allowlisted"},
		{Spec{Fault: AgentRestart, Hosts: []string{"stage-1", "stage-2"}, Duration: time.Minute}, 1, "blast radius"},
		{Spec{Fault: Backdate, Hosts: []string{"stage-db"}, Network: "1111-2222-3333", Duration: time.Minute, By: time.Hour}, 1, "network:1111-2222-3333"},
		{Spec{Fault: Backdate, Hosts: []string{"prod-db"}, Network: "0000-2222-3333", Duration: time.Minute, By: time.Hour}, 1, "host prod-db"},
	}
	for _, c := range cases {
		ex := &fakeExec{}
		in, log, _ := newInjector(t, ex, true)
		in.Policy.MaxTargets = c.max
		p, err := Build(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = in.Run(context.Background(), p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
		if len(ex.got()) != 0 {
			t.Errorf("%+v: a refused plan executed %v", c.spec, ex.got())
		}
		if rs := readLog(t, log); actions(rs) != "refuse" {
			t.Errorf("log: %s", actions(rs))
		}
	}
	// with the blast radius raised, two hosts go
	ex := &fakeExec{}
	in, _, _ := newInjector(t, ex, true)
	in.Policy.MaxTargets = 2
	in.After = func(time.Duration) <-chan time.Time { c := make(chan time.Time, 1); c <- time.Now(); return c }
	p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-1", "stage-2"}, Duration: time.Minute})
	if err := in.Run(context.Background(), p); err != nil || len(ex.got()) != 8 { // with each host's timer cancelled
		t.Fatalf("two allowed hosts: %v %v", err, ex.got())
	}
}

// A lasting fault is healed when its time is up.
func TestHealAfterDuration(t *testing.T) {
	t.Parallel()
	ex := &fakeExec{}
	in, log, _ := newInjector(t, ex, true)
	var waited time.Duration
	in.After = func(d time.Duration) <-chan time.Time {
		waited = d
		c := make(chan time.Time, 1)
		c <- time.Now()
		return c
	}
	p, _ := Build(Spec{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: 90 * time.Second, ID: "x"})
	if err := in.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	got := ex.got()
	if waited != 90*time.Second || len(got) != 6 || !strings.Contains(got[3], "iptables -D OUTPUT") || !strings.Contains(got[4], "iptables -D INPUT") ||
		got[5] != "stage-1: systemctl stop csconform-heal-x.timer" {
		t.Fatalf("waited %s, ran %v", waited, got)
	}
	if a := actions(readLog(t, log)); a != "plan,apply,apply,apply,heal,heal,disarm,done" {
		t.Fatalf("log: %s", a)
	}
}

// A step that fails heals what was applied, including the failed step.
func TestHealOnError(t *testing.T) {
	t.Parallel()
	ex := &fakeExec{fail: "-I INPUT"}
	in, log, _ := newInjector(t, ex, true)
	p, _ := Build(Spec{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: time.Hour, ID: "x"})
	err := in.Run(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "-I INPUT") {
		t.Fatalf("error: %v", err)
	}
	got := ex.got()
	if len(got) != 6 || !strings.Contains(got[3], "-D OUTPUT") || !strings.Contains(got[4], "-D INPUT") || !strings.Contains(got[5], ".timer") {
		t.Fatalf("ran %v", got)
	}
	rs := readLog(t, log)
	if a := actions(rs); a != "plan,apply,apply,apply,heal,heal,disarm,done" || !strings.HasPrefix(rs[3].Result, "error:") || rs[3].Output != "boom" {
		t.Fatalf("log: %s %+v", a, rs)
	}
}

// Ctrl-C (a cancelled context) while the fault holds heals at once.
func TestHealOnCancel(t *testing.T) {
	t.Parallel()
	ex := &fakeExec{ran: make(chan struct{}, 10)}
	in, log, _ := newInjector(t, ex, true)
	p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-1"}, Duration: time.Hour, ID: "x"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- in.Run(ctx, p) }()
	<-ex.ran
	<-ex.ran // both apply steps ran
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancel did not end the fault")
	}
	got := ex.got()
	if len(got) != 4 || got[2] != "stage-1: systemctl start cloudstack-agent" || got[3] != "stage-1: systemctl stop csconform-heal-x.timer" {
		t.Fatalf("ran %v", got)
	}
	rs := readLog(t, log)
	if a := actions(rs); a != "plan,apply,apply,heal,disarm,done" || !strings.Contains(rs[3].Result, "cancelled") {
		t.Fatalf("log: %s", a)
	}
}

// The log is appended to, never rewritten.
func TestLogAppends(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "log")
	for i := 0; i < 2; i++ {
		l, err := OpenLog(name)
		if err != nil {
			t.Fatal(err)
		}
		in := &Injector{Exec: &fakeExec{}, Log: l, Policy: Policy{AllowHosts: []string{"*"}}}
		p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{"h"}, ID: "r" + string(rune('0'+i))})
		in.Run(context.Background(), p)
		l.Close()
	}
	rs := readLog(t, name)
	// per run: the plan, then a dry-run record for each of 2 apply, 1 heal and 1 disarm steps
	if len(rs) != 10 || rs[0].ID != "r0" || rs[5].ID != "r1" || len(rs[0].Heal) != 1 || len(rs[0].Disarm) != 1 {
		t.Fatalf("log: %+v", rs)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"iptables": "iptables", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", `$(x)`: `'$(x)'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// A target is a bare host name or address: a user part, an ssh option or whitespace in it would
// make ssh connect somewhere (or as someone) the allowlist never saw.
func TestBuildRefusesHostTricks(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		"stage-kvm1@127.0.0.1", // ssh connects to 127.0.0.1 as user stage-kvm1
		"root@stage-kvm1",
		"@stage-kvm1",
		"-oProxyCommand=touch /tmp/x",
		"-p2222",
		"-",
		"stage-kvm1 -p 22",
		"stage-kvm1\t",
		" stage-kvm1",
		"stage-kvm1\n127.0.0.1",
		"stage-kvm1:22",
		"ssh://stage-kvm1",
		"stage-kvm1/x",
		"stage-kvm1$(id)",
		"",
	} {
		if _, err := Build(Spec{Fault: AgentRestart, Hosts: []string{h}}); err == nil || !strings.Contains(err.Error(), "bad host") {
			t.Errorf("Build accepted host %q: %v", h, err)
		}
	}
	for _, h := range []string{"stage-kvm1", "stage-kvm1.example.org", "10.0.0.5", "::1", "fe80::1", "kvm_2"} {
		if _, err := Build(Spec{Fault: AgentRestart, Hosts: []string{h}}); err != nil {
			t.Errorf("Build refused host %q: %v", h, err)
		}
	}
}

// The allowlist is matched against what ssh connects to (ssh -G) as well as the name given: an
// alias (a HostName in ssh's config) outside the allowlist is refused before anything runs.
func TestAllowlistMatchesWhatSSHConnectsTo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, host string
		to         Endpoint
		resolveErr error
		want       string // "" allowed
	}{
		{"same name", "stage-kvm1", Endpoint{HostName: "stage-kvm1", User: "root", Port: "22"}, nil, ""},
		{"alias inside the allowlist", "stage-kvm1", Endpoint{HostName: "stage-kvm1.lab", User: "root", Port: "22"}, nil, ""},
		{"alias outside", "stage-kvm1", Endpoint{HostName: "127.0.0.1", User: "root", Port: "22"}, nil,
			"ssh connects to root@127.0.0.1:22 (ssh -G): host 127.0.0.1 matches no --allow-host pattern"},
		{"case differs (ssh lowercases)", "STAGE-kvm1", Endpoint{HostName: "stage-kvm1", User: "root", Port: "22"}, nil, ""},
		{"ssh -G fails", "stage-kvm1", Endpoint{}, errors.New("bad configuration option"), "cannot tell what ssh connects to"},
		{"no hostname in ssh -G", "stage-kvm1", Endpoint{User: "root"}, nil, "cannot tell what ssh connects to"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := &fakeExec{resolve: map[string]Endpoint{c.host: c.to}, resolveErr: c.resolveErr}
			in, log, _ := newInjector(t, ex, true)
			in.After = func(time.Duration) <-chan time.Time { c := make(chan time.Time, 1); c <- time.Time{}; return c }
			p, err := Build(Spec{Fault: AgentRestart, Hosts: []string{c.host}, ID: "x"})
			if err != nil {
				t.Fatal(err)
			}
			err = in.Run(context.Background(), p)
			if c.want == "" {
				if err != nil || len(ex.got()) == 0 {
					t.Fatalf("refused: %v (ran %v)", err, ex.got())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if len(ex.got()) != 0 {
				t.Fatalf("ran %v", ex.got())
			}
			if a := actions(readLog(t, log)); a != "refuse" {
				t.Fatalf("log: %s", a)
			}
		})
	}
}

// The same with the real ssh -G and an ssh config: stage-kvm1 is an alias of 127.0.0.1, outside
// the allowlist, and is refused (without the check ssh would connect to 127.0.0.1); stage-kvm2 is
// an alias of stage-kvm2.lab, inside it (a dry run: nothing connects).
func TestSSHResolveRefusesAnAliasOutside(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client (apt-get install openssh-client; ci/test.sh installs it)")
	}
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host stage-kvm1\n  HostName 127.0.0.1\n  Port 1\n\nHost stage-kvm2\n  HostName stage-kvm2.lab\n  User ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ssh := SSH{User: "root", Options: []string{"-F", cfg}, Timeout: time.Second}
	ep, err := ssh.Resolve(context.Background(), "stage-kvm1")
	if err != nil || ep.HostName != "127.0.0.1" || ep.Port != "1" || ep.User != "root" {
		t.Fatalf("ssh -G: %+v %v", ep, err)
	}
	in, _, _ := newInjector(t, ssh, true)
	p, err := Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-kvm1"}, ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	err = in.Run(context.Background(), p)
	if err == nil || !strings.HasPrefix(err.Error(), "refused") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("an alias of 127.0.0.1 was not refused: %v", err)
	}
	in, _, out := newInjector(t, ssh, false)
	p, _ = Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-kvm2"}, ID: "x"})
	if err := in.Run(context.Background(), p); err != nil || !strings.Contains(out.String(), "DRY RUN") ||
		!strings.Contains(out.String(), "ssh to      stage-kvm2: root@stage-kvm2.lab:22 (ssh -G)" /* --ssh-user wins over the config's User */) {
		t.Fatalf("an alias inside the allowlist: %v\n%s", err, out)
	}
}

// Issue 35 item 7: a proxy sends ssh past the allowlist. With the real ssh -G: a ProxyCommand (from
// --ssh-opt or ssh's config) is refused, its target being a command that cannot be checked; a
// ProxyJump host outside the allowlist is refused, one inside goes, and the dry run shows it.
func TestSSHResolveRefusesAProxy(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client (apt-get install openssh-client; ci/test.sh installs it)")
	}
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host stage-kvm3\n  ProxyCommand nc prod1 22\n\nHost stage-kvm4\n  ProxyJump prod1\n\n"+
		"Host stage-kvm5\n  ProxyJump ops@stage-bastion:2222\n\nHost stage-bastion\n  ProxyJump prod2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := func(ssh SSH, host, want string) {
		t.Helper()
		in, _, _ := newInjector(t, ssh, false)
		p, err := Build(Spec{Fault: AgentRestart, Hosts: []string{host}, ID: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Run(context.Background(), p); err == nil || !strings.HasPrefix(err.Error(), "refused") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with %v: %v, want a refusal naming %q", host, ssh.Options, err, want)
		}
	}
	base := SSH{User: "root", Options: []string{"-F", cfg}, Timeout: time.Second}
	refused(SSH{User: "root", Options: []string{"-F", cfg, "-oProxyCommand=nc prod1 22"}, Timeout: time.Second}, "stage-kvm1", "ProxyCommand")
	refused(base, "stage-kvm3", "ProxyCommand")
	refused(SSH{User: "root", Options: []string{"-F", cfg, "-J", "prod1"}, Timeout: time.Second}, "stage-kvm1", "prod1")
	refused(base, "stage-kvm4", "prod1")
	// stage-kvm5 jumps through stage-bastion, which is allowed, but stage-bastion itself through prod2
	refused(base, "stage-kvm5", "prod2")

	ok := SSH{User: "root", Options: []string{"-F", cfg, "-J", "ops@stage-bastion2:2222"}, Timeout: time.Second}
	in, _, out := newInjector(t, ok, false)
	p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-kvm1"}, ID: "x"})
	if err := in.Run(context.Background(), p); err != nil || !strings.Contains(out.String(), "ssh to      stage-kvm1: root@stage-kvm1:22 via ops@stage-bastion2:2222 (ssh -G)") {
		t.Fatalf("a jump host inside the allowlist: %v\n%s", err, out)
	}

	// --allow-proxy-command: it goes, and the dry run shows it
	in, _, out = newInjector(t, base, false)
	in.Policy.AllowProxyCommand = true
	p, _ = Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-kvm3"}, ID: "x"})
	if err := in.Run(context.Background(), p); err != nil || !strings.Contains(out.String(), `ssh to      stage-kvm3: root@stage-kvm3:22 through ProxyCommand "nc prod1 22" (ssh -G)`) {
		t.Fatalf("an allowed ProxyCommand: %v\n%s", err, out)
	}
}

// Issue 49: a shared connection sends ssh past the allowlist as a proxy does: with a ControlPath
// (from --ssh-opt or ssh's config) ssh uses whatever master listens on the socket, connected to any
// host. With the real ssh -G it is refused, named, unless --allow-control-path; the dry run shows it.
func TestSSHResolveRefusesASharedConnection(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client (apt-get install openssh-client; ci/test.sh installs it)")
	}
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host stage-kvm6\n  ControlMaster auto\n  ControlPath /tmp/cm-shared\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts []string
		host string
	}{
		{[]string{"-F", cfg, "-oControlPath=/tmp/cm-shared"}, "stage-kvm1"},
		{[]string{"-F", cfg}, "stage-kvm6"},
	} {
		in, _, _ := newInjector(t, SSH{User: "root", Options: c.opts, Timeout: time.Second}, false)
		p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{c.host}, ID: "x"})
		if err := in.Run(context.Background(), p); err == nil || !strings.HasPrefix(err.Error(), "refused") || !strings.Contains(err.Error(), `ControlPath "/tmp/cm-shared"`) {
			t.Errorf("%s with %v: %v, want a refusal naming the ControlPath", c.host, c.opts, err)
		}
	}
	// -oControlPath=none on the command line wins over the config's
	in, _, _ := newInjector(t, SSH{User: "root", Options: []string{"-F", cfg, "-oControlPath=none"}, Timeout: time.Second}, false)
	p, _ := Build(Spec{Fault: AgentRestart, Hosts: []string{"stage-kvm6"}, ID: "x"})
	if err := in.Run(context.Background(), p); err != nil {
		t.Fatalf("ControlPath=none: %v", err)
	}
	in, _, out := newInjector(t, SSH{User: "root", Options: []string{"-F", cfg}, Timeout: time.Second}, false)
	in.Policy.AllowControlPath = true
	if err := in.Run(context.Background(), p); err != nil || !strings.Contains(out.String(), `ssh to      stage-kvm6: root@stage-kvm6:22 sharing ControlPath "/tmp/cm-shared" (ControlMaster auto) (ssh -G)`) {
		t.Fatalf("an allowed ControlPath: %v\n%s", err, out)
	}
}

// After a heal, the host's dead man's switch (the csconform-heal-ID timer) is cancelled: left armed
// it would start the agent (or delete rules) again later. Already gone is fine; a failed heal leaves
// it armed, as the last resort.
func TestHealCancelsTheTimer(t *testing.T) {
	t.Parallel()
	now := func(time.Duration) <-chan time.Time { c := make(chan time.Time, 1); c <- time.Now(); return c }
	cases := []struct {
		name      string
		spec      Spec
		fail, out string
		wantLast  string
		wantErr   string
	}{
		{name: "agent-stop", spec: Spec{Fault: AgentRestart, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "x"},
			wantLast: "stage-1: systemctl stop csconform-heal-x.timer"},
		{name: "cut-link", spec: Spec{Fault: Disconnect, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "x"},
			wantLast: "stage-1: systemctl stop csconform-heal-x.timer"},
		{name: "timer already fired and gone", spec: Spec{Fault: AgentRestart, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "x"},
			fail: "stop csconform-heal-x.timer", out: "Failed to stop csconform-heal-x.timer: Unit csconform-heal-x.timer not loaded.",
			wantLast: "stage-1: systemctl stop csconform-heal-x.timer"},
		{name: "timer cannot be stopped", spec: Spec{Fault: AgentRestart, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "x"},
			fail: "stop csconform-heal-x.timer", out: "Access denied",
			wantLast: "stage-1: systemctl stop csconform-heal-x.timer", wantErr: "csconform-heal-x.timer"},
		{name: "heal failed: the timer stays", spec: Spec{Fault: AgentRestart, Hosts: []string{"stage-1"}, Duration: time.Minute, ID: "x"},
			fail: "systemctl start", wantLast: "stage-1: systemctl start cloudstack-agent", wantErr: "heal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := &fakeExec{fail: c.fail, failOut: c.out}
			in, _, _ := newInjector(t, ex, true)
			in.After = now
			p, err := Build(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			err = in.Run(context.Background(), p)
			if (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
			got := ex.got()
			if got[len(got)-1] != c.wantLast {
				t.Fatalf("ran %v, want last %q", got, c.wantLast)
			}
		})
	}
}

// The ssh executor itself refuses a host or user ssh could read as an option or a user part, however
// it was given (the external repro's --ssh-user and --ssh-target reach it without inject's checks).
func TestSSHRefusesOptionsInUserAndHost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ user, host string }{
		{"-oProxyCommand=touch /tmp/x", "stage-1"},
		{"root@127.0.0.1", "stage-1"},
		{"root", "-oProxyCommand=x"},
		{"root", "stage-1@127.0.0.1"},
		{"ro ot", "stage-1"},
	} {
		s := SSH{User: c.user}
		if _, err := s.Run(context.Background(), c.host, []string{"true"}); err == nil || !strings.Contains(err.Error(), "bad ") {
			t.Errorf("Run as %q on %q: %v", c.user, c.host, err)
		}
		if _, err := s.Resolve(context.Background(), c.host); err == nil || !strings.Contains(err.Error(), "bad ") {
			t.Errorf("Resolve as %q on %q: %v", c.user, c.host, err)
		}
	}
}
