package audit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HypervisorHost is one host's truth as a csconform hypervisor serves it (csconform hypervisor
// --listen ADDR: GET /domains lists the running domains with their IPs and disks). It is what a
// setup of the reference server without libvirt has in place of a libvirt URI. It only reads.
type HypervisorHost struct {
	Host string // the host's name in CloudStack
	URL  string // http://ADDR
}

// Domains reads GET URL/domains.
func (h HypervisorHost) Domains() (HostDomains, error) {
	out := HostDomains{Host: h.Host}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(strings.TrimSuffix(h.URL, "/") + "/domains")
	if err != nil {
		return out, fmt.Errorf("host %s: cannot read the hypervisor at %s: %w", h.Host, h.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("host %s: the hypervisor at %s answers %s", h.Host, h.URL, resp.Status)
	}
	var ds []struct {
		Name  string   `json:"name"`
		IPs   []string `json:"ips"`
		Disks []string `json:"disks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ds); err != nil {
		return out, fmt.Errorf("host %s: the hypervisor at %s: %w", h.Host, h.URL, err)
	}
	for _, d := range ds {
		out.Domains = append(out.Domains, Domain{Name: d.Name, Running: true, IPs: d.IPs, Disks: d.Disks})
	}
	return out, nil
}
