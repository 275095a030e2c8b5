package process

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A client that trickles a request's body is cut off once RequestReadTimeout has passed, however
// slowly it goes on sending; before, only the headers had a deadline.
func TestTrickledBodyIsCutOff(t *testing.T) {
	defer func(d time.Duration) { RequestReadTimeout = d }(RequestReadTimeout)
	RequestReadTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httpServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.ReadAll(r.Body) }))
	go srv.Serve(ln)
	defer srv.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /client/api HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		if _, err := c.Write([]byte("a")); err != nil {
			return // the server closed the connection
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("a trickled body held the connection for 10 s")
}
