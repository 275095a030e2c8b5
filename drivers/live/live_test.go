package live

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// eventually polls cond every 50 ms for up to four times limit: a bounded wait, never a claim about
// speed (limit is what an idle machine needs; a loaded one takes longer, and a wait that ends when its
// event comes costs nothing for being generous).
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	limit *= 4
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPipeRoundTripAndClose(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan impl.Pipe, 1)
	go func() {
		p, err := l.Accept()
		if err == nil {
			got <- p
		}
	}()
	agent, err := (&Dialer{Addr: l.Addr()}).Dial("h1")
	if err != nil {
		t.Fatal(err)
	}
	ms := <-got
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	sent := impl.Message{Seq: 7, Kind: impl.MsgPing, HostID: "h1", Report: []string{"i-2-3-VM"}, HasReport: true, CollectedAt: at,
		Domain: &impl.DomainSpec{Name: "r-1-VM", IPs: []string{"10.0.0.1"}}, PingInterval: time.Second}
	if err := agent.Send(sent); err != nil {
		t.Fatal(err)
	}
	m, err := ms.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Seq != 7 || m.Kind != impl.MsgPing || m.Report[0] != "i-2-3-VM" || !m.CollectedAt.Equal(at) || m.Domain.Name != "r-1-VM" || m.PingInterval != time.Second {
		t.Fatalf("round trip changed the message: %+v", m)
	}
	ms.Close()
	if _, err := agent.Recv(); !errors.Is(err, impl.ErrClosed) {
		t.Fatalf("Recv after the peer closed: %v, want ErrClosed", err)
	}
}

func TestProxyHoldsTrafficAndCloseWhileCut(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	serverSide := make(chan net.Conn, 1)
	go func() {
		c, err := echo.Accept()
		if err == nil {
			serverSide <- c
		}
	}()
	px, err := NewProxy("127.0.0.1:0", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	c, err := net.Dial("tcp", px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-serverSide
	in := bufio.NewReader(s)
	c.Write([]byte("one\n"))
	if line, err := in.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("through the proxy: %q %v", line, err)
	}

	px.Cut()
	c.Write([]byte("two\n"))
	s.Close() // the server end goes away during the cut: the client must not see it yet
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("the client saw %v during the cut; want nothing (a read time-out)", err)
	}
	c.SetReadDeadline(time.Time{})
	px.Heal()
	// Healed: the held close reaches the client.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("after heal the client read %v, want the server's close", err)
	}
}

// sink is a history.Sink safe for concurrent use.
type sink struct {
	mu sync.Mutex
	ev []history.Event
}

func (s *sink) Emit(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.ev = append(s.ev, e)
}

func (s *sink) transitions(object string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.ev {
		// a row that leaves the status as it was (HostDaoImpl.updateState writes one, e.g. Alert
		// -AgentDisconnected-> Alert as the cut connection closes) is no change of status
		if e.Kind == history.State && e.Object == object && (e.From == "" || e.From != e.To) {
			out = append(out, e.To)
		}
	}
	return out
}

// A management server and two agents in this process over loopback TCP, each agent behind its own
// proxy, with ping.interval scaled down to 1 s (ping timeout 2.5 s). A VM is deployed onto h2; h2's
// link is cut for longer than the ping timeout and the server, which hears no pings, marks h2 Alert
// (Up + PingTimeout, investigation: Disconnected); h1 stays Up. The link heals, the agent finds its
// connection gone and reconnects: h2 is Up again and still reports the VM.
func TestServerAndAgentsOverTCP(t *testing.T) {
	tier.Need(t, tier.Long) // real time: about 15 s
	t.Parallel()
	env := NewEnv()
	defer env.Close()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rec := &sink{}
	cfg, err := impl.NewConfig(map[string]string{"ping.interval": "1", "vm.job.check.interval": "200", "lock.poll.interval": "0.2",
		"commands.timeout": "CheckHealthCommand=1,CheckOnHostCommand=1"})
	if err != nil {
		t.Fatal(err)
	}
	db := impl.NewDB(env, rec)
	srv := impl.NewServer("ms1", env, db, cfg, impl.Switches{}, ln)
	srv.Start()

	proxies := map[string]*Proxy{}
	hvs := map[string]*FakeHost{}
	agents := map[string]*impl.Agent{}
	for _, h := range []string{"h1", "h2"} {
		px, err := NewProxy("127.0.0.1:0", ln.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		proxies[h] = px
		hvs[h] = NewFakeHost(env, h)
		agents[h] = impl.NewAgent(h, env, &Dialer{Addr: px.Addr()}, hvs[h], rec)
		agents[h].Start()
	}
	defer func() {
		for _, a := range agents {
			a.Kill()
		}
	}()
	status := func(h string) host.Status {
		if r := db.Host(h); r != nil {
			return r.Status
		}
		return ""
	}
	eventually(t, 10*time.Second, "both hosts Up", func() bool { return status("h1") == host.Up && status("h2") == host.Up })

	n := srv.CreateNetwork("guest", false, 8)
	v, j := srv.DeployVirtualMachine("", []int64{n.ID}, "h2")
	if err := srv.WaitJob(j); err != nil {
		t.Fatalf("deploy: %v", err)
	}
	if got := db.VM(v.ID); got.State != vm.Running || got.HostID != "h2" {
		t.Fatalf("deployed VM is %s on %q", got.State, got.HostID)
	}
	if !strings.Contains(strings.Join(hvs["h2"].Running(), ","), v.Name) {
		t.Fatalf("h2 runs %v, not %s", hvs["h2"].Running(), v.Name)
	}

	proxies["h2"].Cut()
	eventually(t, 10*time.Second, "h2 marked Alert after missed pings", func() bool { return status("h2") == host.Alert })
	if status("h1") != host.Up {
		t.Fatalf("h1 is %s while only h2's link was cut", status("h1"))
	}
	mark := len(rec.transitions("host:h2"))
	proxies["h2"].Heal()
	eventually(t, 15*time.Second, "h2 Up again after the heal", func() bool { return status("h2") == host.Up })
	if got := strings.Join(rec.transitions("host:h2")[mark:], " "); got != "Connecting Up" {
		t.Fatalf("h2 went %q after the heal, want \"Connecting Up\"", got)
	}
	if got := db.VM(v.ID); got.State != vm.Running || got.HostID != "h2" || got.PowerState != vm.PowerOn {
		t.Fatalf("after the reconnect the VM is %s/%s on %q", got.State, got.PowerState, got.HostID)
	}
}

// Many API jobs at once on real goroutines, for the race detector (go test -race) as much as for the
// outcome: six VMs deployed at once over two networks on two hosts, then all destroyed and expunged
// at once, while pings and power reports flow.
func TestConcurrentJobsOverTCP(t *testing.T) {
	tier.Need(t, tier.Long) // real time: about 10 s
	t.Parallel()
	env := NewEnv()
	defer env.Close()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, err := impl.NewConfig(map[string]string{"ping.interval": "1", "vm.job.check.interval": "200", "lock.poll.interval": "0.2",
		"commands.timeout": "CheckHealthCommand=1,CheckOnHostCommand=1"})
	if err != nil {
		t.Fatal(err)
	}
	db := impl.NewDB(env, &sink{})
	srv := impl.NewServer("ms1", env, db, cfg, impl.Switches{}, ln)
	srv.Start()
	hvs := map[string]*FakeHost{}
	for _, h := range []string{"h1", "h2"} {
		hvs[h] = NewFakeHost(env, h)
		a := impl.NewAgent(h, env, &Dialer{Addr: ln.Addr()}, hvs[h], &sink{})
		a.Start()
		defer a.Kill()
	}
	eventually(t, 10*time.Second, "both hosts Up", func() bool {
		for _, h := range []string{"h1", "h2"} {
			if r := db.Host(h); r == nil || r.Status != host.Up {
				return false
			}
		}
		return true
	})
	nets := []int64{srv.CreateNetwork("a", false, 8).ID, srv.CreateNetwork("b", false, 8).ID}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	ids := make([]int64, 6)
	for i := range ids {
		v, j := srv.DeployVirtualMachine("", []int64{nets[i%2]}, []string{"h1", "h2"}[i%2])
		ids[i] = v.ID
		wg.Add(1)
		go func() { defer wg.Done(); errs <- srv.WaitJob(j) }()
	}
	wg.Wait()
	for _, id := range ids {
		if err := <-errs; err != nil {
			t.Fatalf("deploy: %v", err)
		}
		if v := db.VM(id); v.State != vm.Running {
			t.Fatalf("vm %d is %s after its deploy succeeded", id, v.State)
		}
	}
	for _, id := range ids {
		j := srv.DestroyVirtualMachine(id, true)
		wg.Add(1)
		go func() { defer wg.Done(); errs <- srv.WaitJob(j) }()
	}
	wg.Wait()
	for _, id := range ids {
		if err := <-errs; err != nil {
			t.Fatalf("destroy: %v", err)
		}
		if v := db.VM(id); !v.Removed {
			t.Fatalf("vm %d is %s, not expunged, after its destroy succeeded", id, v.State)
		}
	}
	for h, hv := range hvs {
		for _, d := range hv.Domains() {
			if d.Type != "DomainRouter" {
				t.Errorf("%s still runs %s after every VM was expunged", h, d.Name)
			}
		}
	}
}

// A server that closes its end during a cut (it declared the host disconnected) leaves what it last
// wrote to an orphaned socket: delivered at a heal within the orphan grace, given up after it (the
// close reaches the agent either way).
func TestProxyOrphanedBytesOutliveTheCloseOnlyForTheGrace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		grace     time.Duration
		delivered bool
	}{
		{"no grace set: kept", 0, true},
		{"heal within the grace: delivered", time.Minute, true},
		{"heal after the grace: given up", 50 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agentLn, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer agentLn.Close()
			agentSide := make(chan net.Conn, 1)
			go func() {
				if c, err := agentLn.Accept(); err == nil {
					agentSide <- c
				}
			}()
			px, err := NewProxy("127.0.0.1:0", agentLn.Addr().String())
			require.NoError(t, err)
			defer px.Close()
			px.SetOrphanGrace(tc.grace)
			server, err := net.Dial("tcp", px.Addr())
			require.NoError(t, err)
			agent := <-agentSide
			defer agent.Close()

			px.Cut()
			server.Write([]byte("StopCommand\n"))
			server.Close()
			time.Sleep(200 * time.Millisecond)
			px.Heal()
			agent.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(agent)
			require.NoError(t, err, "the held close reaches the agent")
			if tc.delivered {
				assert.Equal(t, "StopCommand\n", string(got))
			} else {
				assert.Empty(t, string(got))
			}
		})
	}
}
