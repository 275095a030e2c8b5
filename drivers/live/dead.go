package live

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
)

// What a process does outside its own tasks: the API requests net/http serves on its behalf, the log
// lines and messages of any goroutine that calls into it (a hypervisor's event callback, a sender the
// stale-report fault delays). A killed process does none of it once it is dead: no answer, no log
// line, no message on its sockets (kill -9). Each such write is an act of the process (act): it holds
// the process's life shared, Close holds it alone, so a write lands wholly before the kill or not at
// all, and its history has nothing of the process after the kill's instant.

// answerTimeout bounds the socket write of an answer, which a kill waits for (a client that stops
// reading must not hold a kill).
const answerTimeout = 5 * time.Second

// act runs fn, a write of process e, unless e (or its run) is dead; false if it did not run. fn must
// not act on e again (a kill waiting in between would deadlock them).
func (e *Env) act(fn func()) bool {
	for p := e; p != nil; p = p.parent {
		p.life.RLock()
		defer p.life.RUnlock()
	}
	if e.closed() {
		return false
	}
	fn()
	return true
}

// Handler serves h as threads of process e (an API of a management server): each request's goroutine
// is a task of e while it runs, so the database ends it if e dies (Reap), and its answer is held until
// the handler returns, then sent only if e still lives, wholly, as one act. A request of a dead
// process gets no answer: its connection closes (http.ErrAbortHandler), as a killed process's do.
func (e *Env) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := goid()
		e.owners.set(id, e)
		defer e.owners.set(id, nil)
		if e.closed() {
			panic(http.ErrAbortHandler)
		}
		a := &heldAnswer{header: http.Header{}}
		h.ServeHTTP(a, r)
		if !e.act(func() { a.send(w) }) {
			panic(http.ErrAbortHandler)
		}
	})
}

// heldAnswer is a response kept in memory until its handler is done.
type heldAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *heldAnswer) Header() http.Header { return a.header }

func (a *heldAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *heldAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}

// send writes the answer through to the socket (its length set, so that nothing of it is left for
// net/http to write once the handler has returned).
func (a *heldAnswer) send(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(a.body.Len()))
	if a.status == 0 {
		a.status = http.StatusOK
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(answerTimeout))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body.Bytes())
	_ = rc.Flush()
}

// Sink is s as process e writes to it: a dead process's events are dropped, whichever goroutine
// emits them (an agent's log, written from its tasks and from its hypervisor's callbacks).
func (e *Env) Sink(s history.Sink) history.Sink { return processSink{e, s} }

type processSink struct {
	e *Env
	s history.Sink
}

func (p processSink) Emit(ev history.Event) { p.e.act(func() { p.s.Emit(ev) }) }

// Transport is t as process e uses it: a dead process dials and accepts nothing, and sends nothing
// on the connections it had (impl.ErrClosed; the kernel closes them, the caller's Close does here).
func (e *Env) Transport(t impl.Transport) impl.Transport { return processTransport{e, t} }

type processTransport struct {
	e *Env
	t impl.Transport
}

func (p processTransport) Dial(hostID string) (impl.Pipe, error) {
	if p.e.closed() {
		return nil, impl.ErrClosed
	}
	return p.pipe(p.t.Dial(hostID))
}

func (p processTransport) Accept() (impl.Pipe, error) { return p.pipe(p.t.Accept()) }

// pipe is a connection the process just made: closed at once if it died meanwhile.
func (p processTransport) pipe(c impl.Pipe, err error) (impl.Pipe, error) {
	if err != nil {
		return nil, err
	}
	if p.e.closed() {
		c.Close()
		return nil, impl.ErrClosed
	}
	return processPipe{c, p.e}, nil
}

type processPipe struct {
	impl.Pipe
	e *Env
}

func (p processPipe) Send(m impl.Message) error {
	err := impl.ErrClosed
	p.e.act(func() { err = p.Pipe.Send(m) })
	return err
}
