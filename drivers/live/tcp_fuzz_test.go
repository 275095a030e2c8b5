package live

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/csconform/csconform/impl"
)

// FuzzRecvFrames feeds the agent port any bytes: Recv never panics, ends in impl.ErrClosed, and hands
// the server nothing before a StartupCommand with the agent key, nor anything of a connection whose
// StartupCommand lacked it.
func FuzzRecvFrames(f *testing.F) {
	const key = "fuzz-agent-key-0123456789"
	f.Add([]byte(`{"Kind":"StartupCommand","HostID":"h1","agentKey":"` + key + `"}` + "\n" + `{"Kind":"PingCommand","HostID":"h1"}` + "\n"))
	f.Add([]byte(`{"Kind":"PingCommand","HostID":"h1"}` + "\n"))
	f.Add([]byte(`{"Kind":"StartupCommand","HostID":"h1","agentKey":"wrong"}` + "\n"))
	f.Add([]byte("{\n"))
	f.Add(bytes.Repeat([]byte("x"), MaxFrame+2))
	f.Fuzz(func(t *testing.T, data []byte) {
		server, client := net.Pipe()
		go func() {
			client.Write(data)
			client.Close()
		}()
		p := newPipe(server)
		p.want = key
		authed := false
		for n := 0; ; n++ {
			m, err := p.Recv()
			if err != nil {
				if !errors.Is(err, impl.ErrClosed) {
					t.Fatalf("Recv: %v, want impl.ErrClosed", err)
				}
				return
			}
			if m.Kind == impl.MsgStartup {
				authed = true // check let it through: it carried the key
			}
			if !authed {
				t.Fatalf("message %d (%s) handed over before a StartupCommand with the key", n, m.Kind)
			}
		}
	})
}
