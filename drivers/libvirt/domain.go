package libvirt

import (
	"encoding/xml"
	"fmt"
	"libvirt.org/go/libvirtxml"
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
	dom := libvirtxml.Domain{
		Type:   d.VirtType,
		Name:   d.Name,
		Memory: &libvirtxml.DomainMemory{Value: uint(d.MemoryMiB), Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		OS: &libvirtxml.DomainOS{
			Type:   &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "pc", Type: "hvm"},
			Kernel: d.Kernel, Initrd: d.Initrd, Cmdline: d.Cmdline,
		},
		Features:   &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}},
		OnPoweroff: "destroy", OnReboot: "destroy", OnCrash: "destroy",
		Devices: &libvirtxml.DomainDeviceList{
			// No USB controller: its probe costs the guest seconds under TCG.
			Controllers: []libvirtxml.DomainController{{Type: "usb", Model: "none"}},
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: d.SerialSock}},
				Target: &libvirtxml.DomainSerialTarget{Port: new(uint)},
				Log:    &libvirtxml.DomainChardevLog{File: d.SerialLog, Append: "off"},
			}},
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
		},
	}
	if d.Label.Run != "" {
		lbl, _ := xml.Marshal(d.Label)
		dom.Metadata = &libvirtxml.DomainMetadata{XML: strings.Replace(string(lbl), "<csconform ", "<csconform xmlns=\""+MetadataNS+"\" ", 1)}
	}
	for i, f := range d.Disks {
		format := "raw"
		if strings.HasSuffix(f, ".qcow2") {
			format = "qcow2"
		}
		dom.Devices.Disks = append(dom.Devices.Disks, libvirtxml.DomainDisk{
			Device: "disk",
			Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: format},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: f}},
			Target: &libvirtxml.DomainDiskTarget{Dev: "vd" + string(rune('a'+i)), Bus: "virtio"},
		})
	}
	x, err := dom.Marshal()
	if err != nil {
		// every field above is plain data: a marshal error is a bug here, not bad input
		panic(fmt.Sprintf("domain XML of %s: %v", d.Name, err))
	}
	return x + "\n"
}

// guestCmdline is the kernel command line the guest's /init reads (see ci/build-guest.sh).
func guestCmdline(spec impl.DomainSpec, delay, life time.Duration) string {
	return fmt.Sprintf("console=ttyS0 quiet panic=-1 csc.name=%s csc.delay=%d csc.life=%d csc.ip=%s csc.mac=%s",
		cmdlineValue(spec.Name), seconds(delay), seconds(life),
		cmdlineValue(strings.Join(spec.IPs, ",")), cmdlineValue(strings.Join(spec.MACs, ",")))
}

// ParseDomain reads a domain's XML (DomainGetXMLDesc) with libvirt's own schema types, and the
// csconform label in its <metadata> if it has one (other applications' metadata may sit beside it).
func ParseDomain(x string) (*libvirtxml.Domain, Label, bool, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(x); err != nil {
		return nil, Label{}, false, fmt.Errorf("domain XML: %w", err)
	}
	if dom.Metadata == nil {
		return &dom, Label{}, false, nil
	}
	var md struct {
		Label []Label `xml:"csconform"`
	}
	if err := xml.Unmarshal([]byte("<metadata>"+dom.Metadata.XML+"</metadata>"), &md); err != nil || len(md.Label) == 0 || md.Label[0].Run == "" {
		return &dom, Label{}, false, nil
	}
	l := md.Label[0]
	l.XMLName = xml.Name{}
	return &dom, l, true, nil
}

// DiskSources are the sources of a domain's disks (device "disk", not cdroms or floppies), whatever
// their type: a file, a block device, a network disk's name, a storage pool's pool/volume, a
// directory.
func DiskSources(dom *libvirtxml.Domain) []string {
	if dom.Devices == nil {
		return nil
	}
	var out []string
	for _, dk := range dom.Devices.Disks {
		if dk.Device != "" && dk.Device != "disk" || dk.Source == nil {
			continue
		}
		src := dk.Source
		switch {
		case src.File != nil && src.File.File != "":
			out = append(out, src.File.File)
		case src.Block != nil && src.Block.Dev != "":
			out = append(out, src.Block.Dev)
		case src.Network != nil && src.Network.Name != "":
			out = append(out, src.Network.Name)
		case src.Volume != nil && src.Volume.Volume != "":
			out = append(out, src.Volume.Pool+"/"+src.Volume.Volume)
		case src.Dir != nil && src.Dir.Dir != "":
			out = append(out, src.Dir.Dir)
		}
	}
	return out
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
