package libvirt

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
)

// These need no libvirtd; the tests that boot guests are in libvirt_test.go (build tag libvirt).

func TestPrefixesDoNotOverlap(t *testing.T) {
	a, b := hostPrefix("r1", "h1"), hostPrefix("r1", "h1-x")
	if strings.HasPrefix(b+"vm", a) || strings.HasPrefix(a+"vm", b) {
		t.Fatalf("prefixes overlap: %q %q", a, b)
	}
	if got := hostPrefix("run-7", "host 2"); got != "csc-run_7-host_2-" {
		t.Fatalf("hostPrefix = %q", got)
	}
}

func TestDomainXMLCarriesLabelAndCmdline(t *testing.T) {
	spec := impl.DomainSpec{Name: "r-3-VM", Type: "DomainRouter", IPs: []string{"10.1.1.1"}, MACs: []string{"02:00:00:00:00:01"}}
	x := domainXML{Name: hostPrefix("r", "h") + spec.Name, VirtType: "qemu", MemoryMiB: 128,
		Kernel: "/g/vmlinuz", Initrd: "/g/initramfs.cpio.gz", Cmdline: guestCmdline(spec, 36*time.Second, 0),
		Disks: []string{"/v/ROOT-3-1.qcow2", "/v/data.raw"}, SerialSock: "/d/s", SerialLog: "/d/l",
		Label: Label{Run: "r", Host: "h", Name: spec.Name, Type: spec.Type, Dir: "/d"}}
	s := x.String()
	var parsed struct {
		XMLName  xml.Name `xml:"domain"`
		Type     string   `xml:"type,attr"`
		Name     string   `xml:"name"`
		Metadata struct {
			Inner string `xml:",innerxml"`
		} `xml:"metadata"`
		Cmdline string `xml:"os>cmdline"`
		Disks   []struct {
			Driver struct {
				Type string `xml:"type,attr"`
			} `xml:"driver"`
			Source struct {
				File string `xml:"file,attr"`
			} `xml:"source"`
		} `xml:"devices>disk"`
	}
	if err := xml.Unmarshal([]byte(s), &parsed); err != nil {
		t.Fatalf("domain XML does not parse: %v\n%s", err, s)
	}
	if parsed.Type != "qemu" || parsed.Name != "csc-r-h-r-3-VM" {
		t.Fatalf("type/name: %+v", parsed)
	}
	l, ok := parseLabel(parsed.Metadata.Inner)
	if !ok || l != x.Label {
		t.Fatalf("label round trip: %+v %v from %s", l, ok, parsed.Metadata.Inner)
	}
	if !strings.Contains(parsed.Metadata.Inner, MetadataNS) {
		t.Fatalf("metadata lacks namespace: %s", parsed.Metadata.Inner)
	}
	want := "console=ttyS0 quiet panic=-1 csc.name=r-3-VM csc.delay=36 csc.life=0 csc.ip=10.1.1.1 csc.mac=02:00:00:00:00:01"
	if parsed.Cmdline != want {
		t.Fatalf("cmdline %q, want %q", parsed.Cmdline, want)
	}
	if len(parsed.Disks) != 2 || parsed.Disks[0].Driver.Type != "qcow2" || parsed.Disks[1].Driver.Type != "raw" ||
		parsed.Disks[0].Source.File != "/v/ROOT-3-1.qcow2" {
		t.Fatalf("disks: %+v", parsed.Disks)
	}
}

func TestVolumeFileStaysUnderStore(t *testing.T) {
	for in, want := range map[string]string{
		"/primary/ROOT-1-2.qcow2": "/s/primary/ROOT-1-2.qcow2",
		"../../etc/passwd":        "/s/etc/passwd",
	} {
		if got, err := volumeFile("/s", in); err != nil || got != want {
			t.Errorf("volumeFile(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := volumeFile("/s", "/"); err == nil {
		t.Error("volumeFile(/) accepted")
	}
}

func TestLifecycleNames(t *testing.T) {
	for _, c := range []struct {
		ev, detail int32
		want       impl.LifecycleEvent
	}{
		{2, 0, impl.LifecycleEvent{Event: "STARTED", Detail: "BOOTED"}},
		{5, 0, impl.LifecycleEvent{Event: "STOPPED", Detail: "SHUTDOWN"}},
		{5, 1, impl.LifecycleEvent{Event: "STOPPED", Detail: "DESTROYED"}},
		{5, 2, impl.LifecycleEvent{Event: "STOPPED", Detail: "CRASHED"}},
		{5, 5, impl.LifecycleEvent{Event: "STOPPED", Detail: "FAILED"}},
		{6, 0, impl.LifecycleEvent{Event: "SHUTDOWN", Detail: "FINISHED"}},
	} {
		if got, ok := lifecycle(c.ev, c.detail); !ok || got != c.want {
			t.Errorf("lifecycle(%d,%d) = %+v %v, want %+v", c.ev, c.detail, got, ok, c.want)
		}
	}
	if _, ok := lifecycle(4, 0); ok { // RESUMED is not the agent's business
		t.Error("RESUMED mapped")
	}
}

func TestReadyLine(t *testing.T) {
	log := []byte("csconform: booting r-1-VM\r\ncsconform: ready r-1-VM ip=10.0.0.1 mac=02:00:00:00:00:01\r\n")
	if !readyLine(log, "r-1-VM") || readyLine(log, "r-1") {
		t.Fatal("readyLine")
	}
}

func TestVirtTypeCacheKeyedByBoot(t *testing.T) {
	if bootID() == "" {
		t.Skip("no /proc/sys/kernel/random/boot_id")
	}
	t.Setenv("CSCONFORM_VIRT_TYPE", "")
	dir := t.TempDir()
	if typ, _, _ := cachedVirtType(dir); typ != "" {
		t.Fatalf("empty cache gave %q", typ)
	}
	saveVirtType(dir, "qemu", "kvm probe silent")
	if typ, reason, _ := cachedVirtType(dir); typ != "qemu" || !strings.Contains(reason, "kvm probe silent") {
		t.Fatalf("cache gave %q %q", typ, reason)
	}
	if err := os.WriteFile(virtTypeCache(dir), []byte("another-boot kvm x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if typ, _, _ := cachedVirtType(dir); typ != "" {
		t.Fatalf("cache from another boot used: %q", typ)
	}
}

// TestQcow2MatchesQemuImg: the Go-written image is what qemu-img writes (but for qemu-img's optional
// feature-name header extension), and qemu-img finds it sound.
func TestQcow2MatchesQemuImg(t *testing.T) {
	dir := t.TempDir()
	ours := dir + "/ours.qcow2"
	if err := writeQcow2(ours, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := writeQcow2(ours, 64<<20); err == nil {
		t.Fatal("writeQcow2 overwrote an existing file")
	}
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed: nothing to compare with")
	}
	theirs := dir + "/theirs.qcow2"
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", theirs, "64M").CombinedOutput(); err != nil {
		t.Fatalf("qemu-img create: %v %s", err, out)
	}
	a, _ := os.ReadFile(ours)
	b, _ := os.ReadFile(theirs)
	if len(a) != len(b) {
		t.Fatalf("size %d, qemu-img's %d", len(a), len(b))
	}
	// The v3 header is 112 bytes; qemu-img then writes a feature-name table extension.
	if !bytes.Equal(a[:104], b[:104]) || !bytes.Equal(a[4096:], b[4096:]) {
		t.Fatal("image differs from qemu-img's outside the header extensions")
	}
	out, err := exec.Command("qemu-img", "check", ours).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No errors were found") {
		t.Fatalf("qemu-img check: %v %s", err, out)
	}
	out, err = exec.Command("qemu-img", "info", "--output=json", ours).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"virtual-size": 67108864`) || !strings.Contains(string(out), `"format": "qcow2"`) {
		t.Fatalf("qemu-img info: %v %s", err, out)
	}
}
