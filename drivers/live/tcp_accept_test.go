package live

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingListener fails its first n accepts with err, then hands over the real listener's.
type failingListener struct {
	net.Listener
	n   atomic.Int32
	err error
}

func (f *failingListener) Accept() (net.Conn, error) {
	if f.n.Add(-1) >= 0 {
		return nil, f.err
	}
	return f.Listener.Accept()
}

// A failed accept (EMFILE after a burst of idle connections) leaves the listener accepting: the next
// agent still connects. Before, the first failure ended the server's accept loop for good. A closed
// listener still ends it.
func TestAcceptSurvivesAFailedAccept(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	fl := &failingListener{Listener: l.ln, err: &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}}
	fl.n.Store(3)
	l.ln = fl
	var told atomic.Int32
	l.AcceptFailed = func(error, time.Duration) { told.Add(1) }
	go func() {
		c, err := net.Dial("tcp", l.Addr())
		if err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	p, err := l.Accept()
	require.NoError(t, err, "an agent after three failed accepts")
	p.Close()
	assert.EqualValues(t, 3, told.Load(), "each failure told")

	l.Close()
	_, err = l.Accept()
	assert.True(t, errors.Is(err, impl.ErrClosed), "a closed listener: %v", err)
}
