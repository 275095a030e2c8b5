package faults

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// world records what a fault does to it, in order.
type world struct {
	calls []string
	slept time.Duration
	fail  string // the call that fails
}

func (w *world) do(call string) error {
	w.calls = append(w.calls, call)
	if call == w.fail {
		return errors.New(call + " failed")
	}
	return nil
}

func (w *world) Sleep(d time.Duration) { w.slept += d; w.calls = append(w.calls, "sleep "+d.String()) }
func (w *world) AgentStop(h string, graceful bool) error {
	return w.do(fmt.Sprintf("agent-stop %s graceful=%v", h, graceful))
}
func (w *world) AgentStart(h string) error { return w.do("agent-start " + h) }
func (w *world) CutLink(h string, on bool) error {
	return w.do(fmt.Sprintf("cut %s %v", h, on))
}
func (w *world) CrashDomain(vm, detail string) error { return w.do("crash " + vm + " " + detail) }
func (w *world) GuestShutdown(vm string) error       { return w.do("poweroff " + vm) }
func (w *world) DelayNextOutOfBand(h string, d time.Duration) error {
	return w.do("delay " + h + " " + d.String())
}
func (w *world) SetRouterBoot(d time.Duration) error { return w.do("router-boot " + d.String()) }
func (w *world) HostPower(h string, on bool) error {
	return w.do(fmt.Sprintf("power %s %v", h, on))
}
func (w *world) RemoveHost(h string) error { return w.do("remove " + h) }
func (w *world) Heartbeat(h string, on bool) error {
	return w.do(fmt.Sprintf("heartbeat %s %v", h, on))
}
func (w *world) FailStarts(h string, on bool) error {
	return w.do(fmt.Sprintf("fail-starts %s %v", h, on))
}
func (w *world) ServerStop() error        { return w.do("ms-stop") }
func (w *world) ServerStart() error       { return w.do("ms-start") }
func (w *world) PeerStop(s string) error  { return w.do("peer-stop " + s) }
func (w *world) PeerStart(s string) error { return w.do("peer-start " + s) }
func (w *world) Backdate(n string, d time.Duration) error {
	return w.do("backdate " + n + " " + d.String())
}
func (w *world) Begin(kind string, disruptive bool, detail string, targets ...string) int {
	w.calls = append(w.calls, fmt.Sprintf("begin %s disruptive=%v %s", kind, disruptive, strings.Join(targets, ",")))
	return 0
}
func (w *world) End(int, string) { w.calls = append(w.calls, "end") }

func TestRun(t *testing.T) {
	cases := []struct {
		spec  Spec
		calls string
	}{
		{Spec{Kind: "agent-restart", Host: "h1", Duration: 20 * time.Second},
			"begin agent-restart disruptive=true host:h1|agent-stop h1 graceful=true|sleep 20s|agent-start h1|end"},
		{Spec{Kind: "agent-kill", Host: "h1"},
			"begin agent-kill disruptive=true host:h1|agent-stop h1 graceful=false|sleep 10s|agent-start h1|end"},
		{Spec{Kind: "disconnect", Host: "h2", Duration: 5 * time.Second},
			"begin disconnect disruptive=true host:h2|cut h2 true|sleep 5s|cut h2 false|end"},
		{Spec{Kind: "crash", VM: "web1"}, "begin crash disruptive=true vm:web1|crash web1 FAILED|end"},
		{Spec{Kind: "crash", VM: "web1", Detail: "CRASHED"}, "begin crash disruptive=true vm:web1|crash web1 CRASHED|end"},
		{Spec{Kind: "guest-shutdown", VM: "web1"}, "begin guest-shutdown disruptive=true vm:web1|poweroff web1|end"},
		{Spec{Kind: "stale-report", Host: "h1", Duration: 1500 * time.Millisecond},
			"begin stale-report disruptive=false host:h1|delay h1 1.5s|end"},
		{Spec{Kind: "slow-router-boot", Duration: time.Minute}, "begin slow-router-boot disruptive=false |router-boot 1m0s|end"},
		{Spec{Kind: "host-power-off", Host: "h1"},
			"begin host-power-off disruptive=true host:h1|power h1 false|sleep 30m0s|power h1 true|end"},
		{Spec{Kind: "host-remove", Host: "h2"}, "begin host-remove disruptive=true host:h2|remove h2|end"},
		{Spec{Kind: "host-unreachable", Host: "h1"},
			"begin host-unreachable disruptive=true host:h1|cut h1 true|sleep 5m0s|cut h1 false|end"},
		{Spec{Kind: "heartbeat-fail", Host: "h1", Duration: time.Minute},
			"begin heartbeat-fail disruptive=true host:h1|heartbeat h1 false|sleep 1m0s|heartbeat h1 true|end"},
		{Spec{Kind: "ms-restart"}, "begin ms-restart disruptive=true ms|ms-stop|sleep 30s|ms-start|end"},
		{Spec{Kind: "backdate", Network: "n1", Duration: 48 * time.Hour},
			"begin backdate disruptive=false network:n1|backdate n1 48h0m0s|end"},
	}
	for _, c := range cases {
		t.Run(c.spec.Kind, func(t *testing.T) {
			w := &world{}
			if err := Run(w, c.spec); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(w.calls, "|"); got != c.calls {
				t.Fatalf("calls\n got %s\nwant %s", got, c.calls)
			}
		})
	}
}

func TestRunStopsOnAFailedApply(t *testing.T) {
	w := &world{fail: "agent-stop h1 graceful=true"}
	if err := Run(w, Spec{Kind: "agent-restart", Host: "h1"}); err == nil {
		t.Fatal("no error")
	}
	if got := strings.Join(w.calls, "|"); strings.Contains(got, "sleep") || !strings.HasSuffix(got, "|end") {
		t.Fatalf("a failed apply must end the fault at once: %s", got)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		spec Spec
		err  string
	}{
		{Spec{Kind: "nope"}, `unknown fault "nope"`},
		{Spec{Kind: "agent-restart"}, "needs host"},
		{Spec{Kind: "disconnect", Host: "h1"}, "needs duration"},
		{Spec{Kind: "crash"}, "needs vm"},
		{Spec{Kind: "backdate", Duration: time.Hour}, "needs network"},
		{Spec{Kind: "ms-restart"}, ""},
	}
	for _, c := range cases {
		err := Validate(c.spec)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: got %v, want %q", c.spec, err, c.err)
		}
	}
}
