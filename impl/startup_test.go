package impl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
)

// A host whose status is not Up while its agent's link lives is asked, in the next PingAnswer, to
// re-send its StartupCommand (spec 3.13). That Startup arrives on the connection that already carries
// the host: CloudStack runs the connect sequence again for the host (AgentConnected → Connecting →
// Ready → Up); it is a reconnect, not a protocol error, and the link stays open.
func TestStartupOnSameConnectionReconnectsHost(t *testing.T) {
	s := sim.NewScheduler(7)
	defer s.Close()
	ev := &eventLog{}
	f := sim.NewFabric(s)
	db := impl.NewDB(s, ev)
	cfg, err := impl.NewConfig(map[string]string{"ping.interval": "10"})
	if err != nil {
		t.Fatal(err)
	}
	f.Listen(true)
	srv := impl.NewServer("ms1", s, db, cfg, impl.Switches{}, f)
	srv.Start()
	impl.NewAgent("h1", s, f, sim.NewHost(s, "h1"), ev).Start()
	up := func() bool { h := db.Host("h1"); return h != nil && h.Status == host.Up }
	if err := s.RunUntil(s.Now().Add(time.Minute), up); err != nil || !up() {
		t.Fatalf("h1 not Up after a minute (err %v)", err)
	}

	// Something moves the host out of Up while the link is fine (here a graceful-stop event applied
	// by hand; in CloudStack an operator or another management server can do as much).
	if _, ok := db.HostTransit("test", "h1", host.ShutdownRequested, ""); !ok {
		t.Fatal("Up + ShutdownRequested refused")
	}
	mark := len(ev.events)
	if err := s.RunFor(45 * time.Second); err != nil {
		t.Fatal(err)
	}
	var trail []string
	asked := false
	for _, e := range ev.events[mark:] {
		switch {
		case e.Kind == history.State && e.Object == "host:h1":
			trail = append(trail, e.To)
		case strings.Contains(e.Detail, "requested startup command"):
			asked = true
		case strings.Contains(e.Detail, "Lost connection") || strings.Contains(e.Detail, "Investigating why host"):
			t.Errorf("the re-sent Startup cost the host its connection: %s: %s", e.Actor, e.Detail)
		}
	}
	if !asked {
		t.Fatal("the PingAnswer never asked for a Startup: the test no longer exercises the path")
	}
	if got := strings.Join(trail, " "); got != "Connecting Up" {
		t.Fatalf("host h1 went %q after the re-sent Startup, want \"Connecting Up\"", got)
	}
	// The host is usable on that same link: a command reaches the agent and is answered.
	n := srv.CreateNetwork("n1", false, 4)
	_, j := srv.DeployVirtualMachine("", []int64{n.ID}, "h1")
	var jerr error
	done := false
	s.Go("client", func() { jerr = srv.WaitJob(j); done = true })
	if err := s.RunUntil(s.Now().Add(5*time.Minute), func() bool { return done }); err != nil || !done {
		t.Fatalf("deploy did not finish (err %v)", err)
	}
	if jerr != nil {
		t.Fatalf("deploy after the reconnect failed: %v", jerr)
	}
}
