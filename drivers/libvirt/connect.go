package libvirt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"
)

// Connect opens a libvirt connection for a URI: qemu:///system, qemu+tcp://, qemu+tls://, or
// qemu+ssh://[user@]host[:port]/system. An ssh URI goes through the OpenSSH client, as libvirt's
// own virsh does, so the user's ssh config applies: host aliases, ProxyJump bastions, keys, known
// hosts (the pure-Go ssh of the libvirt client library reads none of it). The remote end runs
// virt-ssh-helper where libvirt has it (libvirt >= 8.5) and nc -U on libvirtd's socket otherwise.
func Connect(uri string) (*golibvirt.Libvirt, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("libvirt URI %q: %w", uri, err)
	}
	if _, transport, _ := strings.Cut(u.Scheme, "+"); transport != "ssh" {
		return golibvirt.ConnectToURI(u)
	}
	argv, err := sshArgv(u)
	if err != nil {
		return nil, err
	}
	conn, err := dialCommand(argv)
	if err != nil {
		return nil, err
	}
	lv := golibvirt.NewWithDialer(dialers.NewAlreadyConnected(conn))
	if err := lv.ConnectToURI(golibvirt.RemoteURI(u)); err != nil {
		conn.Close()
		if msg := conn.stderrText(); msg != "" {
			return nil, fmt.Errorf("ssh to %s: %s", u.Host, msg)
		}
		return nil, fmt.Errorf("libvirt over ssh to %s: %w", u.Host, err)
	}
	return lv, nil
}

// sshArgv is the ssh command for a qemu+ssh URI: BatchMode (keys only, never a prompt), the URI's
// user, port and keyfile, then the host, and the remote command that bridges to libvirtd.
func sshArgv(u *url.URL) ([]string, error) {
	host := u.Hostname()
	if host == "" || strings.HasPrefix(host, "-") {
		return nil, fmt.Errorf("libvirt URI %s: no usable host name", u.Redacted())
	}
	argv := []string{"ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"}
	if user := u.User.Username(); user != "" {
		if strings.HasPrefix(user, "-") {
			return nil, fmt.Errorf("libvirt URI %s: bad user %q", u.Redacted(), user)
		}
		argv = append(argv, "-l", user)
	}
	if p := u.Port(); p != "" {
		argv = append(argv, "-p", p)
	}
	q := u.Query()
	if k := q.Get("keyfile"); k != "" {
		argv = append(argv, "-i", k)
	}
	socket := q.Get("socket")
	if socket == "" {
		socket = "/var/run/libvirt/libvirt-sock"
	}
	remote := string(golibvirt.RemoteURI(u))
	// the one argument the remote shell reads: the values are quoted for it
	cmd := "if command -v virt-ssh-helper >/dev/null 2>&1; then exec virt-ssh-helper " + shQuote(remote) +
		"; else exec nc -U " + shQuote(socket) + "; fi"
	return append(argv, "--", host, cmd), nil
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// cmdConn is a command's stdin and stdout as a net.Conn (libvirt's RPC needs only a stream).
type cmdConn struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	stderr *limitedBuffer
	once   sync.Once
}

// errNoSSH says what to install when there is no ssh client.
var errNoSSH = errors.New("qemu+ssh:// URIs need OpenSSH's ssh client: apt-get install openssh-client")

func dialCommand(argv []string) (*cmdConn, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		if argv[0] == "ssh" {
			return nil, errNoSSH
		}
		return nil, err
	}
	cmd := exec.Command(path, argv[1:]...)
	c := &cmdConn{cmd: cmd, stderr: &limitedBuffer{max: 4096}}
	if c.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if c.out, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *cmdConn) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c *cmdConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// Close ends the command: stdin closed (ssh then exits), killed if it has not after a moment.
func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.in.Close()
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
	})
	return nil
}

func (c *cmdConn) stderrText() string { return strings.TrimSpace(c.stderr.String()) }

func (c *cmdConn) LocalAddr() net.Addr              { return cmdAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr             { return cmdAddr{} }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

type cmdAddr struct{}

func (cmdAddr) Network() string { return "ssh" }
func (cmdAddr) String() string  { return "ssh" }

// limitedBuffer keeps the first max bytes written (ssh's complaint is in its first lines).
type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
