// Package libvirt is csconform's real hypervisor: impl.Hypervisor on libvirtd with QEMU domains that
// boot a tiny Debian-kernel + busybox guest (ci/build-guest.sh). Hosts sharing one libvirtd own their
// domains by name prefix and a metadata label; Cleanup removes everything labelled and nothing else.
// Setup: ci/setup-libvirt.sh, ci/build-guest.sh. Guest tests: CSCONFORM_TIERS=libvirt go test ./drivers/libvirt/.
// See README.md in this directory.
package libvirt
