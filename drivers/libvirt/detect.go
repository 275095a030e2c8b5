package libvirt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// KVMProbeTimeout bounds the KVM probe: a KVM guest prints its first kernel line well within it.
var KVMProbeTimeout = 10 * time.Second

var detected struct {
	sync.Mutex
	done   bool
	typ    string
	reason string
}

// DetectVirtType says which domain type to use, "kvm" or "qemu" (TCG), once per process:
// $CSCONFORM_VIRT_TYPE if set; "qemu" without /dev/kvm; otherwise it boots a tiny labelled kvm probe
// domain and takes KVM only if its guest reaches userspace within KVMProbeTimeout (in a nested VM
// /dev/kvm can exist while KVM guests hang). A probe's result is also kept in baseDir/virt-type for
// later processes until the machine reboots; delete that file to probe again.
func DetectVirtType(uri, guestDir, baseDir string) (string, error) {
	detected.Lock()
	defer detected.Unlock()
	if detected.done {
		return detected.typ, nil
	}
	typ, reason, err := cachedVirtType(baseDir)
	if typ == "" {
		typ, reason, err = detectVirtType(uri, guestDir, baseDir)
		if err != nil {
			return "", err
		}
		saveVirtType(baseDir, typ, reason)
	}
	detected.done, detected.typ, detected.reason = true, typ, reason
	return typ, nil
}

// virtTypeCache keeps a probe's result for later processes until the machine reboots (keyed by the
// kernel's boot id), so every agent process does not pay the probe's timeout.
func virtTypeCache(baseDir string) string { return filepath.Join(baseDir, "virt-type") }

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

func cachedVirtType(baseDir string) (string, string, error) {
	if v := os.Getenv("CSCONFORM_VIRT_TYPE"); v != "" {
		return "", "", nil // the override is handled (and checked) by detectVirtType
	}
	b, err := os.ReadFile(virtTypeCache(baseDir))
	if err != nil {
		return "", "", nil
	}
	f := strings.SplitN(strings.TrimSpace(string(b)), " ", 3)
	if len(f) < 2 || f[0] != bootID() || (f[1] != "kvm" && f[1] != "qemu") {
		return "", "", nil
	}
	reason := "cached since boot"
	if len(f) == 3 {
		reason = f[2] + " (cached in " + virtTypeCache(baseDir) + ")"
	}
	return f[1], reason, nil
}

func saveVirtType(baseDir, typ, reason string) {
	if os.Getenv("CSCONFORM_VIRT_TYPE") != "" || bootID() == "" {
		return
	}
	if err := os.MkdirAll(baseDir, 0o755); err == nil {
		_ = os.WriteFile(virtTypeCache(baseDir), []byte(bootID()+" "+typ+" "+reason+"\n"), 0o644)
	}
}

// VirtTypeReason says why DetectVirtType chose what it did ("" before it ran).
func VirtTypeReason() string {
	detected.Lock()
	defer detected.Unlock()
	return detected.reason
}

func detectVirtType(uri, guestDir, baseDir string) (string, string, error) {
	switch v := os.Getenv("CSCONFORM_VIRT_TYPE"); v {
	case "kvm", "qemu":
		return v, "CSCONFORM_VIRT_TYPE=" + v, nil
	case "":
	default:
		return "", "", fmt.Errorf("CSCONFORM_VIRT_TYPE=%q: want kvm or qemu", v)
	}
	if _, err := os.Stat("/dev/kvm"); err != nil {
		return "qemu", "no /dev/kvm", nil
	}
	lv, err := connect(uri)
	if err != nil {
		return "", "", err
	}
	defer lv.Disconnect()
	run := "probe" + fmt.Sprint(os.Getpid())
	dir := filepath.Join(RunDir(baseDir, run), "domains", "kvm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	_ = os.WriteFile(filepath.Join(RunDir(baseDir, run), runLabelFile), []byte(run+"\n"), 0o644)
	defer os.RemoveAll(RunDir(baseDir, run))
	name := hostPrefix(run, "kvm") + "probe"
	x := domainXML{
		Name: name, VirtType: "kvm", MemoryMiB: MinMemoryMiB,
		Kernel: filepath.Join(guestDir, "vmlinuz"), Initrd: filepath.Join(guestDir, "initramfs.cpio.gz"),
		Cmdline:    "console=ttyS0 csc.name=probe csc.life=1",
		SerialSock: filepath.Join(dir, "serial.sock"), SerialLog: filepath.Join(dir, "serial.log"),
		Label: Label{Run: run, Host: "kvm", Name: "probe", Dir: dir},
	}
	start := time.Now()
	d, err := lv.DomainCreateXML(x.String(), 0)
	if err != nil {
		return "qemu", fmt.Sprintf("kvm domain did not start: %v", err), nil
	}
	defer func() {
		_ = lv.DomainDestroy(d)
		for i := 0; i < 100; i++ {
			if _, err := lv.DomainLookupByName(name); golibvirt.IsNotFound(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for time.Since(start) < KVMProbeTimeout {
		if b, err := os.ReadFile(x.SerialLog); err == nil && strings.Contains(string(b), "csconform: booting probe") {
			return "kvm", fmt.Sprintf("kvm probe reached userspace in %s", time.Since(start).Round(time.Millisecond)), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(x.SerialLog)
	return "qemu", fmt.Sprintf("kvm probe silent for %s (%d bytes of serial output): KVM hangs here, using TCG",
		KVMProbeTimeout, len(b)), nil
}

// Available says why real domains cannot run here (nil: they can): the guest must be built and
// libvirtd must answer at uri ("" for qemu:///system).
func Available(uri, guestDir string) error {
	if guestDir == "" {
		guestDir = DefaultGuestDir()
	}
	for _, f := range []string{"vmlinuz", "initramfs.cpio.gz"} {
		if !fileExists(filepath.Join(guestDir, f)) {
			return fmt.Errorf("guest not built: %s missing (run ci/build-guest.sh)", filepath.Join(guestDir, f))
		}
	}
	lv, err := connect(uri)
	if err != nil {
		return err
	}
	return lv.Disconnect()
}
