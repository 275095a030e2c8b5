package live

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settled waits until the goroutine count is back to at most base: what a killed process left
// running has ended. (It polls on the test's goroutine: assert.Eventually's condition runs on one of
// its own, which would be counted.)
func settled(t *testing.T, base int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines left running: %d, %d before\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
	}
}

// An API request a management server was serving when it was killed is not answered and writes
// nothing more, whether the handler goes on to the database or only to its answer: a killed JVM's
// http threads die with it (kill -9 runs no finally block and flushes no response). The handler is
// not a task the server started (net/http runs it), so it belongs to the process through
// Env.Handler; its socket stays open here, so only the process's death can keep the answer in.
func TestEnvDeadServerAnswersNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		db   bool // the handler reads or writes the database after the kill
	}{{"database then answer", true}, {"answer only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			run := NewEnv()
			defer run.Close()
			sink := &events{}
			db := impl.NewDB(run, sink)
			proc := run.Child()
			entered, release, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
			h := proc.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(ended) // deferred calls run (Go's), the process's writes do not
				close(entered)
				<-release
				if tc.db {
					db.Emit(history.Event{Kind: history.Log, Detail: "API handler after the kill"})
				}
				io.WriteString(w, `{"listzonesresponse":{}}`)
			}))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			srv := &http.Server{Handler: h}
			go srv.Serve(ln)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
			base := runtime.NumGoroutine()
			answered := make(chan error, 1)
			go func() {
				resp, err := client.Get("http://" + ln.Addr().String() + "/client/api?command=listZones")
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					t.Logf("the dead server answered %s: %s", resp.Status, b)
				}
				answered <- err
			}()
			<-entered
			proc.Close() // kill -9: the listener and the connection stay open
			close(release)
			<-ended
			assert.Error(t, <-answered, "a killed server answered")
			assert.Empty(t, sink.details(), "a killed server's handler wrote")
			settled(t, base)
			// a request that comes after the kill is not served at all
			_, err = client.Get("http://" + ln.Addr().String() + "/client/api?command=listZones")
			assert.Error(t, err, "a killed server answered a new request")
		})
	}
}

// recorded is a pipe that keeps what is sent on it.
type recorded struct {
	mu   sync.Mutex
	sent []impl.Message
}

func (p *recorded) Send(m impl.Message) error {
	p.mu.Lock()
	p.sent = append(p.sent, m)
	p.mu.Unlock()
	return nil
}
func (p *recorded) Recv() (impl.Message, error) { return impl.Message{}, impl.ErrClosed }
func (p *recorded) Close()                      {}

func (p *recorded) kinds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.sent {
		out = append(out, m.Kind)
	}
	return out
}

type dialTo struct{ p *recorded }

func (d dialTo) Dial(string) (impl.Pipe, error) { return d.p, nil }
func (d dialTo) Accept() (impl.Pipe, error)     { return nil, impl.ErrClosed }

// A killed agent says nothing more, in its log or on its socket, from whichever goroutine it would
// speak (a task of its own, a hypervisor's event callback into it): its sink and its connections are
// the process's (Env.Sink, Env.Transport), and a dead process's writes go nowhere. A dead process does
// not connect either.
func TestEnvDeadAgentSaysNothing(t *testing.T) {
	run := NewEnv()
	defer run.Close()
	proc := run.Child()
	sink := &events{}
	log := proc.Sink(sink)
	wire := &recorded{}
	net := proc.Transport(dialTo{wire})
	p, err := net.Dial("h1")
	require.NoError(t, err)
	log.Emit(history.Event{Kind: history.Log, Detail: "alive"})
	require.NoError(t, p.Send(impl.Message{Kind: impl.MsgPing}))
	proc.Close()
	done := make(chan struct{})
	go func() { // not a task of the process: a callback into it
		defer close(done)
		log.Emit(history.Event{Kind: history.Log, Detail: "Sending out of band ping with 1 running domains"})
		assert.ErrorIs(t, p.Send(impl.Message{Kind: impl.MsgPing, OutOfBand: true}), impl.ErrClosed)
	}()
	<-done
	log.Emit(history.Event{Kind: history.Log, Detail: "Unable to send ping update"})
	_, err = net.Dial("h1")
	assert.ErrorIs(t, err, impl.ErrClosed, "a dead agent connected")
	assert.Equal(t, []string{"alive"}, sink.details())
	assert.Equal(t, []string{impl.MsgPing}, wire.kinds())
}

// heldSink is a sink that holds its first event (and so the database, which emits under its lock)
// until released.
type heldSink struct {
	events
	once             sync.Once
	entered, release chan struct{}
}

func (s *heldSink) Emit(e history.Event) {
	s.once.Do(func() { close(s.entered); <-s.release })
	s.events.Emit(e)
}

// A task of a process that passed its check (Reap) just before the kill and waits for the database
// writes nothing once it has it: the kill happens between two of the database's accesses
// (DB.Between), and a task that gets the database after it finds its process dead. Before, it wrote
// after the kill (its check was made while its process still lived).
func TestEnvTaskWaitingOnTheDatabaseAtTheKillWritesNothing(t *testing.T) {
	run := NewEnv()
	defer run.Close()
	sink := &heldSink{entered: make(chan struct{}), release: make(chan struct{})}
	db := impl.NewDB(run, sink)
	note := func(what string) { db.Emit(history.Event{Kind: history.Log, Detail: what}) }
	go note("holds the database") // no process's: its event waits in the sink, under the database's lock
	<-sink.entered
	proc := run.Child()
	waiting, ended := make(chan struct{}), make(chan struct{})
	proc.Go("Work-Job-Executor-1", func() {
		defer close(ended)
		close(waiting)
		note("written by a task of the killed process") // past Reap while alive, then waits for the lock
	})
	<-waiting
	time.Sleep(20 * time.Millisecond) // let it reach the database's lock
	killed := make(chan int, 1)
	go db.Between(func() { proc.Close(); killed <- len(sink.details()) })
	time.Sleep(20 * time.Millisecond)
	close(sink.release)
	<-ended
	at := <-killed
	assert.NotContains(t, sink.details()[at:], "written by a task of the killed process")
}
