package external

import (
	"testing"

	"github.com/csconform/csconform/harness/audit"
)

// A host's domains come from a csconform hypervisor's truth when its URI is http(s), else from
// libvirt; --hosts-from-api makes every listed host's URI from the template.
func TestHostSources(t *testing.T) {
	if _, ok := HostSource(audit.LibvirtHost{Host: "h1", URI: "http://127.0.0.1:8097"}).(audit.HypervisorHost); !ok {
		t.Fatal("an http URI is not read from the hypervisor's truth")
	}
	if _, ok := HostSource(audit.LibvirtHost{Host: "h1", URI: "qemu+ssh://h1/system"}).(audit.LibvirtHost); !ok {
		t.Fatal("a libvirt URI is not read from libvirt")
	}
	hosts := HostsFromAPI("http://{ip}:8097", "r1")
	if _, err := hosts(audit.Records{}); err == nil {
		t.Fatal("no hosts listed, no error")
	}
	got, err := hosts(audit.Records{Hosts: []audit.HostRecord{{Name: "kvm1", IP: "10.0.0.5"}, {Name: "kvm2", IP: "10.0.0.6"}}})
	if err != nil || len(got) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	if h, ok := got[1].(audit.HypervisorHost); !ok || h.Host != "kvm2" || h.URL != "http://10.0.0.6:8097" {
		t.Fatalf("%#v", got[1])
	}
}
