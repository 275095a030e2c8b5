// Package process is what csconform server's and csconform agent's processes hold around impl, in
// real time (drivers/live): the server's database (in memory or its state file), agents' listener,
// control endpoint (drivers/control) and CloudStack's API (impl/cloudapi), started and stopped
// together (Server); an agent's hypervisor of real libvirt domains (LibvirtHost). The commands keep
// the flags, the secrets' sources, the order in which things are bound and written, and the output.
package process

import (
	"context"
	"fmt"
	"github.com/csconform/csconform/internal/printable"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/csconform/csconform/drivers/control"
	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/impl/cloudapi"
	"github.com/csconform/csconform/model/history"
)

// Server is a management server process's parts.
type Server struct {
	env     *live.Env
	db      *impl.DB
	srv     *impl.Server
	control *http.Server
	api     *http.Server
}

// Open makes the server's world and database: in memory, or loaded from stateFile (kept there from
// then on, as CloudStack keeps it in MySQL). Close releases them.
func Open(sink history.Sink, stateFile string) (*Server, error) {
	env := live.NewEnv()
	db := impl.NewDB(env, sink)
	if stateFile != "" {
		var err error
		if db, err = impl.OpenDB(env, sink, stateFile); err != nil {
			env.Close()
			return nil, err
		}
	}
	return &Server{env: env, db: db}, nil
}

// Options say how the server runs and where it serves.
type Options struct {
	ID       string // the management server's id
	Config   *impl.Config
	Switches impl.Switches
	Sink     history.Sink // where a refused agent connection is logged (WARN)
	// Agents is the agents' listener; AgentKey is what their StartupCommand must carry.
	Agents   *live.Listener
	AgentKey string
	// Control serves the control endpoint, every request with ControlToken.
	Control      net.Listener
	ControlToken string
	// API, if set, serves CloudStack's API at /client/api, requests signed with Credentials; Logf
	// gets its log lines.
	API         net.Listener
	Credentials cloudapi.Credentials
	Logf        func(format string, args ...any)
}

// Start starts the server on the opened database and serves its endpoints.
func (s *Server) Start(o Options) {
	o.Agents.Key = o.AgentKey
	o.Agents.Refused = func(host, from, why string) {
		o.Sink.Emit(history.Event{Kind: history.Log, Level: "WARN", Actor: "AgentManager", Object: host,
			Detail: fmt.Sprintf("refused the agent connection from %s (host %q): %s", from, cut(host, 64), printable.String(cut(why, 200)))})
	}
	o.Agents.AcceptFailed = func(err error, retry time.Duration) {
		o.Sink.Emit(history.Event{Kind: history.Log, Level: "WARN", Actor: "AgentManager",
			Detail: fmt.Sprintf("accepting an agent connection failed (%v): accepting again in %s", err, retry)})
	}
	s.srv = impl.NewServer(o.ID, s.env, s.db, o.Config, o.Switches, o.Agents)
	s.srv.Start()
	s.control = httpServer(control.Handler(s.srv, s.db, o.Config, o.ControlToken))
	go s.control.Serve(o.Control)
	if o.API != nil {
		mux := http.NewServeMux()
		mux.Handle("/client/api", cloudapi.New(s.srv, cloudapi.Options{Logf: o.Logf}, o.Credentials))
		s.api = httpServer(mux)
		go s.api.Serve(o.API)
	}
}

// Detach stops the database's writes to its state file, like a kill: what the threads still do
// while the process stops never reaches the file (it would not reach MySQL from a dead server
// either). Shutdown does it last.
func (s *Server) Detach() { s.db.Detach() }

// Shutdown stops the server the orderly way: first it stops serving the control endpoint and the API
// (both listeners closed at once, their requests in flight given up to 2 s to finish), and only then
// detaches the database, so that every write answered with success is in the state file. A request
// still running after that is answered 530 (impl.DB.Durable), never a success its write lacks. The
// agents' connections and the server's tasks end at Close, what they write then not reaching the file,
// as at a kill; no agent is answered a write it relies on (a reconnecting agent starts over).
func (s *Server) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range []*http.Server{s.control, s.api} {
		if h != nil {
			wg.Add(1)
			go func() { defer wg.Done(); h.Shutdown(ctx) }()
		}
	}
	wg.Wait()
	s.db.Detach()
}

// Close ends the server's world: its tasks stop.
func (s *Server) Close() { s.env.Close() }

// cut shortens a peer's text for the log: a refused agent's host id or message kind is whatever it
// sent, up to a 4 MiB frame (issue 49: a 9 MB name wrote a 9 MB line).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// RequestReadTimeout bounds the reading of a whole request, body included, on the API and control
// endpoints: with only a header timeout, a body trickled a byte every 5 s held a connection for ever
// (issue 49: 500 of 500 held). A handler's own run is not bounded (a deploy's job is waited on).
var RequestReadTimeout = 60 * time.Second

// httpServer is an endpoint's server with the read bounds every endpoint has.
func httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: RequestReadTimeout, IdleTimeout: 2 * time.Minute}
}
