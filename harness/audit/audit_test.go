package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// clean is a healthy zone: h1 runs web1 and net1's router, h2 runs web2; records agree.
func clean() (Records, []HostDomains) {
	rec := Records{
		Hosts:    []HostRecord{{ID: "u-h1", Name: "h1", State: "Up"}, {ID: "u-h2", Name: "h2", State: "Up"}},
		Networks: []NetworkRecord{{ID: "n1", Name: "net1", State: "Implemented", CIDR: "10.1.1.0/24", Gateway: "10.1.1.1"}},
		VMs: []VMRecord{
			{ID: "v1", InstanceName: "i-2-3-VM", Type: "User", State: "Running", HostName: "h1",
				NICs: []NIC{{NetworkID: "n1", IP: "10.1.1.10", MAC: "02:00:00:00:00:0a"}}},
			{ID: "v2", InstanceName: "i-2-4-VM", Type: "User", State: "Running", HostName: "h2",
				NICs: []NIC{{NetworkID: "n1", IP: "10.1.1.11", MAC: "02:00:00:00:00:0b"}}},
			{ID: "r1", InstanceName: "r-2-VM", Type: "DomainRouter", State: "Running", HostName: "h1", NetworkIDs: []string{"n1"},
				NICs: []NIC{{NetworkID: "n1", MAC: "02:00:00:00:00:01"}}}, // the gateway is in no NIC's record
		},
		Volumes: []VolumeRecord{
			{ID: "vol3", VMID: "v1", Path: "/primary/ROOT-3.qcow2", State: "Ready"},
			{ID: "vol4", VMID: "v2", Path: "/primary/ROOT-4.qcow2", State: "Ready"},
		},
	}
	hosts := []HostDomains{
		{Host: "h1", Domains: []Domain{
			{Name: "i-2-3-VM", Running: true, IPs: []string{"10.1.1.10"}, Disks: []string{"/mnt/pool/primary/ROOT-3.qcow2"}},
			{Name: "r-2-VM", Running: true, IPs: []string{"10.1.1.1"}},
			{Name: "i-2-9-VM", Running: false}, // defined, shut off: not judged
			{Name: "my-own-vm", Running: true}, // not CloudStack's
		}},
		{Host: "h2", Domains: []Domain{
			// no IP visible in the domain: its MAC lends the NIC's address
			{Name: "i-2-4-VM", Running: true, MACs: []string{"02:00:00:00:00:0B"}, Disks: []string{"/primary/ROOT-4.qcow2"}},
		}},
	}
	return rec, hosts
}

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		plant func(r *Records, h []HostDomains)
		want  []string // "check object" of every finding, in order
		text  []string // words the messages must carry
	}{
		{name: "clean", plant: func(*Records, []HostDomains) {}},
		{name: "orphan: record expunged, domain runs (D3)", plant: func(r *Records, h []HostDomains) {
			r.VMs = r.VMs[1:]
			r.Volumes = r.Volumes[1:]
		}, want: []string{
			"ip-conflict ip:10.1.1.10",
			"orphan-domain domain:i-2-3-VM",
			"volume-in-use volume:/mnt/pool/primary/ROOT-3.qcow2",
		}, text: []string{"no VM record is named i-2-3-VM", "free in the pool of network n1", "no volume record"}},
		{name: "orphan: record Stopped on an Up host (D2)", plant: func(r *Records, h []HostDomains) {
			r.VMs[0].State, r.VMs[0].HostName = "Stopped", ""
			r.VMs[0].NICs[0].IP = ""
		}, want: []string{"ip-conflict ip:10.1.1.10", "orphan-domain domain:i-2-3-VM"}, text: []string{"is Stopped"}},
		{name: "stopped record on a Disconnected host is not yet judged", plant: func(r *Records, h []HostDomains) {
			r.VMs[0].State = "Stopped"
			r.Hosts[0].State = "Disconnected"
		}},
		{name: "orphan: record places it on another host", plant: func(r *Records, h []HostDomains) {
			r.VMs[0].HostName = "h2"
		}, want: []string{"orphan-domain domain:i-2-3-VM"}, text: []string{`places it on host "h2"`}},
		{name: "duplicate IP: reused by a new VM while the old domain runs", plant: func(r *Records, h []HostDomains) {
			r.VMs, r.Volumes = r.VMs[1:], r.Volumes[1:]
			r.VMs = append(r.VMs, VMRecord{ID: "v5", InstanceName: "i-2-5-VM", Type: "User", State: "Running", HostName: "h2",
				NICs: []NIC{{NetworkID: "n1", IP: "10.1.1.10"}}})
			h[1].Domains = append(h[1].Domains, Domain{Name: "i-2-5-VM", Running: true, IPs: []string{"10.1.1.10"}})
		}, want: []string{
			"ip-conflict ip:10.1.1.10", "ip-conflict ip:10.1.1.10",
			"orphan-domain domain:i-2-3-VM",
			"volume-in-use volume:/mnt/pool/primary/ROOT-3.qcow2",
		}, text: []string{"used by 2 running domains", "allocated to VM v5"}},
		{name: "free but used IP", plant: func(r *Records, h []HostDomains) {
			r.VMs[0].NICs[0].IP = ""
		}, want: []string{"ip-conflict ip:10.1.1.10"}, text: []string{"free in the pool"}},
		{name: "stranded volume in Destroy", plant: func(r *Records, h []HostDomains) {
			r.Volumes[0].State = "Destroy"
		}, want: []string{"volume-in-use volume:/primary/ROOT-3.qcow2"}, text: []string{"is Destroy"}},
		{name: "network Shutdown while its router runs (D1)", plant: func(r *Records, h []HostDomains) {
			r.Networks[0].State = "Shutdown"
		}, want: []string{"network-router network:n1"}, text: []string{"Shutdown but its router r-2-VM"}},
		{name: "address outside every network is not judged", plant: func(r *Records, h []HostDomains) {
			h[0].Domains[0].IPs = append(h[0].Domains[0].IPs, "192.168.122.5")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, hosts := clean()
			c.plant(&rec, hosts)
			fs, ign := Check(rec, hosts, Options{Time: time.Unix(0, 0)})
			var got []string
			var all strings.Builder
			for _, f := range fs {
				got = append(got, f.Check+" "+f.Object)
				all.WriteString(f.Message + "\n")
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("findings:\n%s\nwant:\n%s\nmessages:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"), all.String())
			}
			for _, w := range c.text {
				if !strings.Contains(all.String(), w) {
					t.Errorf("no message says %q:\n%s", w, all.String())
				}
			}
			if len(ign) != 1 || ign[0].Domain != "my-own-vm" {
				t.Errorf("ignored: %+v", ign)
			}
			for _, f := range fs {
				if f.Check != NetworkRouter && f.Host == "" {
					t.Errorf("finding without a host: %v", f)
				}
			}
		})
	}
}

// Domains named csc-<run>-<host>-<instance> (drivers/libvirt) are read through --domain-prefix; a
// domain without the prefix is not CloudStack's.
func TestDomainPrefix(t *testing.T) {
	t.Parallel()
	rec, _ := clean()
	rec.VMs = rec.VMs[1:] // web1 expunged
	hosts := []HostDomains{{Host: "h1", Domains: []Domain{
		{Name: "csc-run1-h1-i-2-3-VM", Running: true},
		{Name: "csc-run1-h1-r-2-VM", Running: true},
		{Name: "csc-run2-h1-i-2-3-VM", Running: true}, // another run on the same libvirtd
		{Name: "labelled", Instance: "i-2-4-VM", Running: true},
	}}}
	fs, ign := Check(rec, hosts, Options{DomainPrefix: "csc-run1-{host}-"})
	if len(fs) != 2 || fs[0].Object != "domain:i-2-3-VM" || fs[1].Object != "domain:i-2-4-VM" || fs[0].Host != "h1" {
		t.Fatalf("findings: %v", fs)
	}
	if len(ign) != 1 || ign[0].Domain != "csc-run2-h1-i-2-3-VM" {
		t.Fatalf("ignored: %+v", ign)
	}
}

func TestConfirm(t *testing.T) {
	t.Parallel()
	a := []Finding{{Check: OrphanDomain, Object: "domain:x", Message: "1"}, {Check: IPConflict, Object: "ip:1"}}
	b := []Finding{{Check: OrphanDomain, Object: "domain:x", Message: "2"}, {Check: VolumeInUse, Object: "volume:v"}}
	got := Confirm(a, b)
	if len(got) != 1 || got[0].Message != "2" {
		t.Fatalf("Confirm: %v", got)
	}
	if len(Confirm(b)) != 2 || Confirm() != nil {
		t.Fatal("one pass confirms itself")
	}
}

func TestParseDomain(t *testing.T) {
	t.Parallel()
	x := `<domain type='kvm'><name>csc-r1-h1-i-2-3-VM</name>
<metadata><csconform xmlns='https://csconform.dev/xmlns/libvirt/1' run='r1' host='h1' name='i-2-3-VM' type='User' dir='/x'/></metadata>
<os><type>hvm</type><cmdline>console=ttyS0 csc.name=i-2-3-VM csc.ip=10.1.1.10 csc.mac=02:00:00:00:00:0a</cmdline></os>
<devices>
<disk type='file' device='disk'><source file='/var/lib/csconform/r1/volumes/primary/ROOT-3.qcow2'/></disk>
<disk type='block' device='disk'><source dev='/dev/vg/data'/></disk>
<disk type='file' device='cdrom'><source file='/iso/systemvm.iso'/></disk>
<interface type='bridge'><mac address='02:00:00:00:00:0a'/></interface>
</devices></domain>`
	d, l, err := parseDomain(x)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "csc-r1-h1-i-2-3-VM" || strings.Join(d.IPs, ",") != "10.1.1.10" || strings.Join(d.MACs, ",") != "02:00:00:00:00:0a" ||
		strings.Join(d.Disks, ",") != "/var/lib/csconform/r1/volumes/primary/ROOT-3.qcow2,/dev/vg/data" {
		t.Fatalf("domain: %+v", d)
	}
	if l.Run != "r1" || l.Host != "h1" || l.Name != "i-2-3-VM" {
		t.Fatalf("label: %+v", l)
	}
	// a CloudStack host's domain: other metadata beside ours (nova's, say), disks of every source
	// type libvirt has (RBD, a pool volume, a file behind a floppy that is not a disk)
	x = `<domain type='kvm'><name>i-2-9-VM</name>
<metadata><nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1"><nova:name>x</nova:name></nova:instance><csconform xmlns='https://csconform.dev/xmlns/libvirt/1' run='r2' host='h2' name='i-2-9-VM' dir='/y'/></metadata>
<devices>
<disk type='network' device='disk'><source protocol='rbd' name='cloudstack/ROOT-9'><host name='mon1' port='6789'/></source></disk>
<disk type='volume' device='disk'><source pool='primary' volume='DATA-9'/></disk>
<disk type='file' device='floppy'><source file='/f.img'/></disk>
<interface type='bridge'><mac address='1e:00:aa:00:00:01'/></interface><interface type='bridge'><mac address='1e:00:aa:00:00:02'/></interface>
</devices></domain>`
	if d, l, err = parseDomain(x); err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.Disks, ",") != "cloudstack/ROOT-9,primary/DATA-9" || len(d.MACs) != 2 || d.IPs != nil || l.Run != "r2" || l.Name != "i-2-9-VM" {
		t.Fatalf("domain %+v, label %+v", d, l)
	}
	if _, _, err := parseDomain("<domain><name>x</nam"); err == nil {
		t.Fatal("broken XML parsed")
	}
	if got := HostURI("qemu+ssh://root@{name}/system", HostRecord{ID: "u1", Name: "kvm1"}); got != "qemu+ssh://root@kvm1/system" {
		t.Fatal(got)
	}
	if got := HostURI("qemu+tcp://{ip}/system", HostRecord{Name: "kvm1", IP: "10.0.0.5"}); got != "qemu+tcp://10.0.0.5/system" {
		t.Fatal(got)
	}
}

// Run: a host that cannot be read is an error and its domains are not judged; a host CloudStack does
// not list is a warning; with Confirm, damage seen once only (an operation in flight) is dropped.
func TestRun(t *testing.T) {
	t.Parallel()
	rec, hosts := clean()
	reads := 0
	records := func() (Records, error) {
		reads++
		r := rec
		if reads == 1 { // the first pass reads web1's record a moment too late (a start in flight)
			r.VMs = r.VMs[1:]
		}
		return r, nil
	}
	src := []HostSource{
		HostFunc(func() (HostDomains, error) { return hosts[0], nil }),
		HostFunc(func() (HostDomains, error) { return HostDomains{}, errors.New("host h2: cannot reach libvirtd") }),
		HostFunc(func() (HostDomains, error) { return HostDomains{Host: "h9"}, nil }),
	}
	r, err := Run(context.Background(), Config{Records: records, Hosts: src, Confirm: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 || r.Passes != 2 || len(r.Errors) != 1 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "h9") {
		t.Fatalf("report: %+v", r)
	}
	var b strings.Builder
	r.WriteTable(&b)
	for _, w := range []string{"no damage found", "ERROR host h2", "WARNING host h9", "confirmed by 2 passes", "h1/my-own-vm"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table does not say %q:\n%s", w, b.String())
		}
	}
	// damage that stays is confirmed
	reads = 0
	records = func() (Records, error) { r := rec; r.VMs = r.VMs[1:]; return r, nil }
	r, err = Run(context.Background(), Config{Records: records, Hosts: src[:1], Confirm: time.Millisecond})
	if err != nil || len(r.Findings) == 0 || r.Passes != 2 {
		t.Fatalf("report: %v %+v", err, r)
	}
}
