package libvirt

import (
	"path/filepath"
	"slices"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// DomainInfo is one of a host's domains as libvirt has it: what an invariant checker takes as the
// truth, never what the agent remembers.
type DomainInfo struct {
	Name    string   // the agent-side name (without the csc-<run>-<host>- prefix)
	Running bool     // active in libvirt
	IPs     []string // the guest addresses its definition gives it (csc.ip= on the kernel line)
	Disks   []string // the volume names of the files it has as disks (QEMU holds them open)
}

// Domains lists this host's labelled domains, running or not, sorted by name, with the addresses and
// volumes their live XML gives them.
func (h *Host) Domains() ([]DomainInfo, error) {
	doms, _, err := h.lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	if err != nil {
		return nil, err
	}
	volDir := filepath.Join(h.runDir, "volumes")
	var out []DomainInfo
	for _, d := range doms {
		n, ok := strings.CutPrefix(d.Name, h.prefix)
		if !ok {
			continue
		}
		x, err := h.lv.DomainGetXMLDesc(d, 0)
		if err != nil {
			continue // gone meanwhile
		}
		dom, l, ok, err := ParseDomain(x)
		if err != nil || !ok || l.Run != h.Run || l.Host != h.HostID || l.Name != n {
			continue
		}
		info := DomainInfo{Name: n}
		if a, err := h.lv.DomainIsActive(d); err == nil && a == 1 {
			info.Running = true
		}
		cmdline := ""
		if dom.OS != nil {
			cmdline = dom.OS.Cmdline
		}
		for _, f := range strings.Fields(cmdline) {
			if v, ok := strings.CutPrefix(f, "csc.ip="); ok && v != "-" {
				info.IPs = strings.Split(v, ",")
			}
		}
		for _, src := range DiskSources(dom) {
			if rel, ok := strings.CutPrefix(src, volDir); ok {
				info.Disks = append(info.Disks, rel)
			} else {
				info.Disks = append(info.Disks, src)
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b DomainInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
