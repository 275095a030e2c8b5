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
// domain and takes KVM only if the guest's kernel writes to the serial port within KVMProbeTimeout
// (in a nested VM /dev/kvm can exist while KVM guests hang).
func DetectVirtType(uri, guestDir, baseDir string) (string, error) {
	detected.Lock()
	defer detected.Unlock()
	if detected.done {
		return detected.typ, nil
	}
	typ, reason, err := detectVirtType(uri, guestDir, baseDir)
	if err != nil {
		return "", err
	}
	detected.done, detected.typ, detected.reason = true, typ, reason
	return typ, nil
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
