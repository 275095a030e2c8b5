package audit

import (
	"strings"
	"testing"

	"github.com/csconform/csconform/internal/tier"
)

// Reads the local libvirtd (read-only): every domain is listed with its disks, and a domain made by a
// csconform run (drivers/libvirt) is found again under its run and host, by its instance name.
// CSCONFORM_TIERS=libvirt go test ./harness/audit/ -run TestLibvirtHost -v
func TestLibvirtHost(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	all, err := LibvirtHost{Host: "local", URI: "qemu:///system"}.Domains()
	if err != nil {
		t.Skipf("no libvirtd here: %v", err)
	}
	t.Logf("%d domain(s)", len(all.Domains))
	for _, d := range all.Domains {
		t.Logf("  %s running=%v ips=%v macs=%v disks=%v", d.Name, d.Running, d.IPs, d.MACs, d.Disks)
		// drivers/libvirt names: csc-<run>-<host>-<instance>
		parts := strings.SplitN(d.Name, "-", 4)
		if len(parts) != 4 || parts[0] != "csc" {
			continue
		}
		mine, err := LibvirtHost{Host: parts[2], URI: "qemu:///system", Run: parts[1]}.Domains()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range mine.Domains {
			if m.Name == d.Name && m.Instance == parts[3] {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: not found again by its label (run %s, host %s): %+v", d.Name, parts[1], parts[2], mine.Domains)
		}
	}
}
