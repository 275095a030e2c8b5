package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/harness/audit"
	"github.com/csconform/csconform/internal/tier"
)

// csconform inject crash --local --yes against the local libvirtd: a labelled throwaway domain
// (no disk, no kernel: QEMU idles in the firmware) is SIGKILLed through its pid file and is gone.
// A dry run first leaves it running. Around it, the audit reads the real libvirtd: with no record of
// i-2-1-VM (planted: its VM expunged) the running domain is an orphan; once crashed, nothing is found. CSCONFORM_TIERS=libvirt go test ./cmd/csconform -run TestInjectCrashesALocalDomain
func TestInjectCrashesALocalDomain(t *testing.T) {
	tier.Need(t, tier.Libvirt)
	u, _ := url.Parse(libvirt.DefaultURI)
	lv, err := golibvirt.ConnectToURI(u)
	if err != nil {
		t.Skipf("no libvirtd: %v", err)
	}
	defer lv.Disconnect()
	run := fmt.Sprintf("injtest%d", os.Getpid())
	name := "csc-" + run + "-h1-i-2-1-VM"
	x := fmt.Sprintf(`<domain type='qemu'><name>%s</name>
<metadata><csconform xmlns='%s' run='%s' host='h1' name='i-2-1-VM' dir='%s'/></metadata>
<memory unit='MiB'>32</memory><vcpu>1</vcpu><os><type arch='x86_64' machine='pc'>hvm</type></os>
<on_crash>destroy</on_crash><devices><controller type='usb' model='none'/><memballoon model='none'/></devices></domain>`,
		name, libvirt.MetadataNS, run, t.TempDir())
	d, err := lv.DomainCreateXML(x, 0)
	if err != nil {
		t.Skipf("cannot start a throwaway domain: %v", err)
	}
	defer func() {
		if cur, err := lv.DomainLookupByName(name); err == nil {
			_ = lv.DomainDestroy(cur)
		}
	}()
	auditNow := func() []audit.Finding {
		r, err := audit.Run(context.Background(), audit.Config{
			Records: func() (audit.Records, error) {
				return audit.Records{Hosts: []audit.HostRecord{{ID: "u1", Name: "h1", State: "Up"}}}, nil
			},
			Hosts: []audit.HostSource{audit.LibvirtHost{Host: "h1", URI: libvirt.DefaultURI, Run: run}},
		})
		if err != nil || len(r.Errors) > 0 {
			t.Fatalf("audit: %v %v", err, r)
		}
		return r.Findings
	}
	if f := auditNow(); len(f) != 1 || f[0].Check != audit.OrphanDomain || f[0].Object != "domain:i-2-1-VM" || f[0].Host != "h1" {
		t.Fatalf("audit before the crash: %v", f)
	}
	log := filepath.Join(t.TempDir(), "inject.log")
	args := []string{"inject", "crash", "--host", "h1", "--vm", name, "--allow-host", "h1", "--allow-vm", "csc-injtest*", "--local", "--audit-log", log}
	runCLICases(t, []cliCase{{args, 0, "DRY RUN"}})
	if a, err := lv.DomainIsActive(d); err != nil || a != 1 {
		t.Fatalf("a dry run stopped the domain: %v %d", err, a)
	}
	runCLICases(t, []cliCase{{append(args, "--yes"), 0, "ok"}})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := lv.DomainLookupByName(name); golibvirt.IsNotFound(err) {
			if f := auditNow(); len(f) != 0 {
				t.Fatalf("audit after the crash: %v", f)
			}
			return // crashed and reaped
		}
		if time.Now().After(deadline) {
			t.Fatal("the domain is still there 15 s after the crash")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
