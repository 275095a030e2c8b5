package libvirt

import (
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/internal/tier"
)

// A qemu+ssh URI reaches libvirtd through the ssh on PATH (here one that runs the remote bridge on
// this machine: virt-ssh-helper, or nc -U): the RPC works over it, and ssh was given the URI's
// user and host.
func TestConnectOverSSH(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	log := fakeSSH(t)
	lv, err := Connect("qemu+ssh://root@stage-kvm1/system")
	require.NoError(t, err)
	defer lv.Disconnect()
	_, _, err = lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	require.NoError(t, err)
	v, err := lv.ConnectGetLibVersion()
	require.NoError(t, err)
	assert.Greater(t, v, uint64(8_000_000))
	assert.Contains(t, readArgs(t, log), "-l root -- stage-kvm1 if command -v virt-ssh-helper")
}
