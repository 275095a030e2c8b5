package libvirt

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A qemu+ssh URI becomes an OpenSSH command (so ~/.ssh/config, ProxyJump and aliases apply, as
// with virsh): keys only, the URI's user, port and keyfile, and a remote bridge to libvirtd.
func TestSSHArgv(t *testing.T) {
	u, _ := url.Parse("qemu+ssh://root@stage-kvm1:2222/system?keyfile=/k/id&socket=/run/l.sock")
	argv, err := sshArgv(u)
	require.NoError(t, err)
	assert.Equal(t, []string{"ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-l", "root", "-p", "2222", "-i", "/k/id", "--", "stage-kvm1",
		"if command -v virt-ssh-helper >/dev/null 2>&1; then exec virt-ssh-helper 'qemu:///system'; else exec nc -U '/run/l.sock'; fi"}, argv)
	for _, bad := range []string{"qemu+ssh://-oProxyCommand=id/system", "qemu+ssh:///system", "qemu+ssh://-x@h/system"} {
		u, _ := url.Parse(bad)
		_, err := sshArgv(u)
		assert.Error(t, err, bad)
	}
}

// What ssh says when it cannot connect is the error (not libvirt's "connection closed").
func TestConnectSaysWhatSSHSaid(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ssh"), []byte("#!/bin/sh\necho 'ssh: Could not resolve hostname nowhere: Name or service not known' >&2\nexit 255\n"), 0o755)
	t.Setenv("PATH", dir)
	_, err := Connect("qemu+ssh://root@nowhere/system")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ssh to nowhere: ssh: Could not resolve hostname nowhere")
	t.Setenv("PATH", t.TempDir())
	_, err = Connect("qemu+ssh://root@nowhere/system")
	assert.ErrorIs(t, err, errNoSSH)
	assert.Contains(t, err.Error(), "apt-get install openssh-client")
}

// fakeSSH puts an ssh on PATH that runs the remote command here (the last argument, as the remote
// shell would) and logs its arguments: a qemu+ssh connection then reaches the local libvirtd.
func fakeSSH(t *testing.T) string {
	dir := t.TempDir()
	log := filepath.Join(dir, "args")
	os.WriteFile(filepath.Join(dir, "ssh"), []byte("#!/bin/sh\necho \"$@\" > "+log+"\nfor a; do last=$a; done\nexec sh -c \"$last\"\n"), 0o755)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func readArgs(t *testing.T, log string) string {
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}
