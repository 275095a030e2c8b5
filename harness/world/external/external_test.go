package external

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/faults/inject"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/audit"
	"github.com/csconform/csconform/harness/cloudclient"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
)

// worldExec is inject's executor on the live world's hosts: systemctl stop/start cloudstack-agent
// stop and start the host's agent; systemd-run (the dead man's switch) and its cancelling
// (systemctl stop csconform-heal-ID.timer) do nothing here.
type worldExec struct {
	c   *harness.Cluster
	mu  sync.Mutex
	ran []string
}

func (x *worldExec) Run(_ context.Context, host string, argv []string) (string, error) {
	x.mu.Lock()
	x.ran = append(x.ran, host+": "+strings.Join(argv, " "))
	x.mu.Unlock()
	var act func() error
	switch strings.Join(argv, " ") {
	case "systemctl stop cloudstack-agent":
		act = func() error { return x.c.AgentStop(host, true) }
	case "systemctl start cloudstack-agent":
		act = func() error { return x.c.AgentStart(host) }
	default:
		if argv[0] == "systemd-run" || (len(argv) == 3 && argv[1] == "stop" && strings.HasSuffix(argv[2], ".timer")) {
			return "", nil
		}
		return "", fmt.Errorf("not on this host: %v", argv)
	}
	done := make(chan error, 1)
	x.c.Go("inject", func() { done <- act() })
	return "", <-done
}

// liveHosts reads the live world's hosts as audit's HostSources (what libvirt would say).
func liveHosts(c *harness.Cluster) []audit.HostSource {
	var out []audit.HostSource
	for _, h := range c.HostIDs {
		out = append(out, audit.HostFunc(func() (audit.HostDomains, error) {
			hd := audit.HostDomains{Host: h}
			for _, d := range c.HostDomains() {
				if d.HostID == h {
					hd.Domains = append(hd.Domains, audit.Domain{Name: d.Name, Running: d.Running, IPs: d.IPs, Disks: d.Disks})
				}
			}
			return hd, nil
		}))
	}
	return out
}

// startReference starts the reference server with its API face in the live world (20× clock) for a
// scenario's hosts and config, under a profile, as an external CloudStack to drive.
func startReference(t *testing.T, sc *harness.Scenario, profile string) *harness.Cluster {
	t.Helper()
	sw, err := impl.ProfileSwitches(profile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := harness.NewLiveCluster(harness.Options{Seed: sc.Seed, Hosts: sc.Hosts, Defects: sw, Config: sc.Config}, harness.LiveOptions{Speed: 20, API: true})
	if err != nil {
		t.Fatal(err)
	}
	c.EndSetup() // CloudStack's own network GC timing, as a scenario's steps see it
	t.Cleanup(c.Close)
	return c
}

// loadScenario is a built-in scenario.
func loadScenario(t *testing.T, name string) *harness.Scenario {
	t.Helper()
	sc, err := conformance.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// D3 run from outside: against the reference server under cloudstack-4.22 the run reports the
// orphaned domain and the IP conflict (and is not linearizable), under fixed nothing; either way every
// VM and network it created is gone afterwards, and the key pair is in no output.
func TestExternalSeed004(t *testing.T) {
	tier.Need(t, tier.Long) // runs seed 004 twice against the reference server in the live world (~15 s)
	t.Parallel()            // mostly waiting, as the other live-world tests here: side by side
	cases := []struct {
		profile string
		want    []string
	}{
		{"cloudstack-4.22", []string{"ip-conflict", "orphan-domain", "volume-in-use"}},
		{"fixed", nil},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			t.Parallel()
			sc := loadScenario(t, "seed-004-forced-destroy")
			c := startReference(t, sc, tc.profile)
			url, creds, _ := c.APIEndpoint()
			var log, injectOut bytes.Buffer
			x := &worldExec{c: c}
			start := time.Now()
			res, err := harness.Run(Def, sc, harness.RunOptions{Profile: tc.profile, Own: &Options{
				API:    cloudclient.Options{URL: url, APIKey: creds.APIKey, SecretKey: creds.SecretKey},
				Hosts:  liveHosts(c),
				Inject: &Inject{Exec: x, Policy: inject.Policy{AllowHosts: []string{"h1"}}, Yes: true, Out: &injectOut},
				Log:    &log, Now: c.Now, Speed: 20, Poll: 100 * time.Millisecond,
			}})
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			text := checkVerdicts(t, res, tc.profile, tc.want, start)
			if tc.want != nil && len(res.NotLinearizable) == 0 {
				t.Errorf("the observed history of D3 is linearizable")
			}
			if tc.want == nil && len(res.NotLinearizable) > 0 {
				t.Errorf("not linearizable under fixed: %v", res.NotLinearizable)
			}
			if !slices.ContainsFunc(x.ran, func(s string) bool { return s == "h1: systemctl stop cloudstack-agent" }) {
				t.Errorf("the agent restart did not go through inject: %v", x.ran)
			}
			// everything the run created is gone
			if len(res.Leftovers) > 0 {
				t.Errorf("left behind: %v", res.Leftovers)
			}
			for _, v := range c.DB.VMs(nil) {
				if v.Type == "User" && !v.Removed {
					t.Errorf("VM %s (%s) is still there", v.Name, v.State)
				}
			}
			for _, n := range c.DB.Networks(nil) {
				if !n.Removed {
					t.Errorf("network %s (%s) is still there", n.Name, n.State)
				}
			}
			// the key pair is in no output
			js, _ := json.Marshal(res)
			hist, _ := json.Marshal(res.Rec.History().Slice())
			for _, out := range []string{log.String(), injectOut.String(), text, string(js), string(hist)} {
				for _, secret := range []string{creds.SecretKey, creds.APIKey} {
					if strings.Contains(out, secret) {
						t.Errorf("a credential appears in the output: %q", out)
					}
				}
			}
		})
	}
}

// What the run cannot do from outside is refused up front, naming the step and what is missing.
func TestExternalPreflight(t *testing.T) {
	parse := func(y string) *harness.Scenario {
		sc, err := harness.ParseScenario([]byte(y), "test")
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	restart := parse("name: r\nhosts: [h1]\nnetworks: [{name: n}]\nsteps:\n  - {op: deploy, vm: a, networks: [n]}\n  - {fault: agent-restart, host: h1}\n")
	crash := parse("name: c\nhosts: [h1]\nnetworks: [{name: n}]\nsteps:\n  - {op: deploy, vm: a, networks: [n]}\n  - {fault: crash, vm: a}\n")
	ms := parse("name: m\nhosts: [h1]\nsteps:\n  - {fault: ms-restart}\n")
	primed := parse("name: p\nhosts: [h1]\nnetworks: [{name: n, primed: true}]\nsteps:\n  - {wait: 1s}\n")
	conf := parse("name: s\nhosts: [h1]\nsteps:\n  - {op: setConfig, key: ping.interval, value: '5'}\n")
	access := &Inject{Exec: inject.Local{}, Policy: inject.Policy{AllowHosts: []string{"kvm*"}}, Yes: true}
	cases := []struct {
		name   string
		sc     *harness.Scenario
		eo     Options
		expect string
		want   []string // in the error ("" : no error)
	}{
		{"no host access", restart, Options{}, "", []string{"step 2 (fault agent-restart on h1) needs host access", "--allow-host", "--yes"}},
		{"no --yes", restart, Options{Inject: &Inject{Exec: inject.Local{}, Policy: inject.Policy{AllowHosts: []string{"h1"}}}}, "", []string{"step 2", "add --yes"}},
		{"host not allowlisted", restart, Options{Inject: access}, "", []string{"step 2", "host h1 is not allowlisted"}},
		{"mapped host allowlisted", restart, Options{Inject: access, HostMap: map[string]string{"h1": "kvm1"}}, "", nil},
		{"crash without --allow-vm", crash, Options{Inject: access}, "", []string{"step 2 (fault crash)", "--allow-vm"}},
		{"ms-restart", ms, Options{Inject: access}, "", []string{"step 1 (fault ms-restart) cannot run against an external CloudStack"}},
		{"primed network", primed, Options{}, "", []string{"network n (primed) cannot run against an external CloudStack"}},
		{"setConfig", conf, Options{}, "", []string{"step 1 (setConfig ping.interval)"}},
		{"expect unknown", restart, Options{Inject: access, HostMap: map[string]string{"h1": "kvm1"}}, "fixed", []string{"--expect fixed", "states no outcome"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.eo.Preflight(tc.sc, tc.expect)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("not refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// Ctrl-C in the middle of a run: the run stops, and what it created is removed all the same.
func TestExternalInterrupted(t *testing.T) {
	tier.Need(t, tier.Long) // runs against the reference server in the live world (a few seconds)
	t.Parallel()
	sc, err := harness.ParseScenario([]byte("name: long\nhosts: [h1]\nnetworks: [{name: n}]\nsteps:\n  - {op: deploy, vm: a, networks: [n], host: h1}\n  - {wait: 1h}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := startReference(t, sc, "fixed")
	url, creds, _ := c.APIEndpoint()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Ctrl-C once the VM runs (a bounded wait: the test fails below if it never does)
		for range 600 {
			if vs := c.DB.VMs(func(v *impl.VMVO) bool { return v.Type == "User" && v.State == "Running" }); len(vs) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	_, err = harness.Run(Def, sc, harness.RunOptions{Own: &Options{
		API:   cloudclient.Options{URL: url, APIKey: creds.APIKey, SecretKey: creds.SecretKey},
		Hosts: liveHosts(c), Ctx: ctx, Now: c.Now, Speed: 20, Poll: 100 * time.Millisecond,
	}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want interrupted", err)
	}
	for _, v := range c.DB.VMs(nil) {
		if v.Type == "User" && !v.Removed {
			t.Errorf("VM %s (%s) is still there", v.Name, v.State)
		}
	}
	for _, n := range c.DB.Networks(nil) {
		if !n.Removed {
			t.Errorf("network %s (%s) is still there", n.Name, n.State)
		}
	}
	if len(c.DB.VMs(nil)) == 0 {
		t.Errorf("the run created nothing before it was interrupted")
	}
}

func TestExternalRedact(t *testing.T) {
	w := &extWorld{secrets: []string{"S3CRET", "APIKEY1"}}
	cases := []struct{ in, want string }{
		{`listHosts: Get "http://m:8080/client/api?apiKey=APIKEY1&command=listHosts&signature=abc%3D": dial tcp: connection refused (is the URL right?)`,
			`listHosts: Get "http://m:8080/client/api?…": dial tcp: connection refused (is the URL right?)`},
		{"job failed: signed with S3CRET by APIKEY1", "job failed: signed with <hidden> by <hidden>"},
		{"nothing to hide (really?)", "nothing to hide (really?)"},
	}
	for _, c := range cases {
		if got := w.redact(c.in); got != c.want {
			t.Errorf("redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// checkVerdicts logs res's report and checks that its violations, each kind once and sorted, are
// want and that it met profile's expectations; it returns the report.
func checkVerdicts(t *testing.T, res *harness.Result, profile string, want []string, start time.Time) string {
	t.Helper()
	var text strings.Builder
	res.WriteText(&text, res.Started)
	t.Logf("%s (%s wall)\n%s", profile, time.Since(start).Round(time.Millisecond), text.String())
	var got []string
	for _, v := range res.Violations {
		got = append(got, v.Invariant)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Errorf("violations %v, want %v", got, want)
	}
	if len(res.Mismatches) > 0 {
		t.Errorf("outcome differs from %s's expectations: %v", profile, res.Mismatches)
	}
	return text.String()
}
