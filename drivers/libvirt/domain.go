package libvirt

import (
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/csconform/csconform/impl"
)

// MetadataNS is the XML namespace of the label every harness-made domain carries in its <metadata>.
const MetadataNS = "https://csconform.dev/xmlns/libvirt/1"

// NamePrefix starts the name of every domain the harness makes.
const NamePrefix = "csc-"

// Label is what a harness-made domain carries in its <metadata>: whose it is and where its files are.
type Label struct {
	XMLName xml.Name `xml:"csconform"`
	Run     string   `xml:"run,attr"`
	Host    string   `xml:"host,attr"`
	Name    string   `xml:"name,attr"` // the name the agent knows (DomainSpec.Name)
	Type    string   `xml:"type,attr,omitempty"`
	Dir     string   `xml:"dir,attr"` // this domain's run files (serial log and socket)
}

// namePart makes a run or host id usable inside a domain name: no '-', so that
// "csc-<run>-<host>-" prefixes never overlap between hosts.
func namePart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// hostPrefix is the domain-name prefix of one host's domains in one run.
func hostPrefix(run, host string) string {
	return NamePrefix + namePart(run) + "-" + namePart(host) + "-"
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// cmdlineValue keeps a kernel command line value to one word.
func cmdlineValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r <= ' ' || r == '"' || r > '~' {
			return '_'
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

func seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// domainXML is a transient domain booting the cached guest kernel and initramfs directly, with one
// virtio disk per volume file, the serial port on a unix socket (logged to a file), ACPI for the
// guest's power off, and the csconform label in <metadata>.
type domainXML struct {
	Name       string
	VirtType   string
	MemoryMiB  int
	Kernel     string
	Initrd     string
	Cmdline    string
	Disks      []string
	SerialSock string
	SerialLog  string
	Label      Label
}

func (d domainXML) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<domain type='%s'>\n", esc(d.VirtType))
	fmt.Fprintf(&b, "  <name>%s</name>\n", esc(d.Name))
	if d.Label.Run != "" {
		lbl, _ := xml.Marshal(d.Label)
		fmt.Fprintf(&b, "  <metadata>%s</metadata>\n",
			strings.Replace(string(lbl), "<csconform ", "<csconform xmlns='"+MetadataNS+"' ", 1))
	}
	fmt.Fprintf(&b, "  <memory unit='MiB'>%d</memory>\n  <vcpu>1</vcpu>\n", d.MemoryMiB)
	b.WriteString("  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n")
	fmt.Fprintf(&b, "    <kernel>%s</kernel>\n    <initrd>%s</initrd>\n    <cmdline>%s</cmdline>\n  </os>\n",
		esc(d.Kernel), esc(d.Initrd), esc(d.Cmdline))
	b.WriteString("  <features><acpi/></features>\n")
	b.WriteString("  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>destroy</on_reboot>\n  <on_crash>destroy</on_crash>\n")
	// No USB controller: its probe costs the guest seconds under TCG.
	b.WriteString("  <devices>\n    <controller type='usb' model='none'/>\n")
	for i, f := range d.Disks {
		format := "raw"
		if strings.HasSuffix(f, ".qcow2") {
			format = "qcow2"
		}
		fmt.Fprintf(&b, "    <disk type='file' device='disk'><driver name='qemu' type='%s'/><source file='%s'/><target dev='vd%c' bus='virtio'/></disk>\n",
			format, esc(f), 'a'+rune(i))
	}
	fmt.Fprintf(&b, "    <serial type='unix'><source mode='bind' path='%s'/><log file='%s' append='off'/><target port='0'/></serial>\n",
		esc(d.SerialSock), esc(d.SerialLog))
	b.WriteString("    <memballoon model='none'/>\n  </devices>\n</domain>\n")
	return b.String()
}

// guestCmdline is the kernel command line the guest's /init reads (see ci/build-guest.sh).
func guestCmdline(spec impl.DomainSpec, delay, life time.Duration) string {
	return fmt.Sprintf("console=ttyS0 quiet panic=-1 csc.name=%s csc.delay=%d csc.life=%d csc.ip=%s csc.mac=%s",
		cmdlineValue(spec.Name), seconds(delay), seconds(life),
		cmdlineValue(strings.Join(spec.IPs, ",")), cmdlineValue(strings.Join(spec.MACs, ",")))
}

// parseLabel reads the label out of DomainGetMetadata's answer.
func parseLabel(s string) (Label, bool) {
	var l Label
	if err := xml.Unmarshal([]byte(s), &l); err != nil || l.Run == "" {
		return Label{}, false
	}
	l.XMLName = xml.Name{}
	return l, true
}

// volumeFile maps a volume name (a DomainSpec.Disks entry such as /primary/ROOT-3-7.qcow2) to the
// file that stands for it under the run's primary storage directory.
func volumeFile(storeDir, volume string) (string, error) {
	rel := filepath.Clean("/" + volume)
	if rel == "/" {
		return "", fmt.Errorf("invalid volume name %q", volume)
	}
	return filepath.Join(storeDir, rel), nil
}

// readyLine reports whether a serial log holds the guest's ready line.
func readyLine(log []byte, name string) bool {
	return strings.Contains(string(log), "csconform: ready "+cmdlineValue(name)+" ")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
