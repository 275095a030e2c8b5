package libvirt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// Cleanup removes what the harness made on the libvirtd at uri and under baseDir ("" for
// DefaultBaseDir): every domain labelled with csconform metadata (destroyed, and undefined if
// persistent), then every run directory marked with a .csconform-run file (volumes, serial logs,
// sockets). With run set, only that run's. Domains and files without the label are never touched,
// whatever their name. It returns what it removed ("domain NAME", "dir PATH").
func Cleanup(uri, baseDir, run string) ([]string, error) {
	removed, err := CleanupDomains(uri, run)
	if err != nil && removed == nil && !errors.Is(err, errPartial) {
		return nil, err // libvirtd unreachable: the files of running domains stay too
	}
	files, ferr := CleanupFiles(baseDir, run)
	removed = append(removed, files...)
	if e := errors.Join(err, ferr); e != nil {
		return removed, fmt.Errorf("cleanup: %w", e)
	}
	return removed, nil
}

// errPartial marks an error of CleanupDomains after it reached libvirtd.
var errPartial = errors.New("some domains remain")

// Reachable says whether libvirtd answers at uri (the guest need not be built: cleaning up needs
// no guest).
func Reachable(uri string) error {
	lv, err := connect(uri)
	if err != nil {
		return err
	}
	return lv.Disconnect()
}

// CleanupDomains destroys (and undefines) every labelled domain on the libvirtd at uri, only run's
// if set, and returns them ("domain NAME").
func CleanupDomains(uri, run string) ([]string, error) {
	lv, err := connect(uri)
	if err != nil {
		return nil, err
	}
	defer lv.Disconnect()
	removed := []string{}
	var errs []string
	labels, err := Labelled(lv)
	if err != nil {
		return nil, err
	}
	var gone []golibvirt.Domain
	for _, ld := range labels {
		if run != "" && ld.Label.Run != run {
			continue
		}
		d := ld.Domain
		if a, _ := lv.DomainIsActive(d); a == 1 {
			if err := lv.DomainDestroy(d); err != nil && !golibvirt.IsNotFound(err) {
				errs = append(errs, fmt.Sprintf("destroy %s: %v", d.Name, err))
				continue
			}
		}
		gone = append(gone, d)
		removed = append(removed, "domain "+d.Name)
	}
	// Wait until libvirt has reaped them (transient ones vanish; undefine persistent ones).
	deadline := time.Now().Add(60 * time.Second)
	for _, d := range gone {
		for {
			cur, err := lv.DomainLookupByName(d.Name)
			if golibvirt.IsNotFound(err) {
				break
			}
			if err == nil {
				if a, _ := lv.DomainIsActive(cur); a == 0 {
					_ = lv.DomainUndefineFlags(cur, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineSnapshotsMetadata|golibvirt.DomainUndefineNvram)
				}
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Sprintf("domain %s still there after destroy", d.Name))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("%w: %s", errPartial, strings.Join(errs, "; "))
	}
	return removed, nil
}

// CleanupFiles removes the run directories under baseDir ("" for DefaultBaseDir) that carry the
// .csconform-run label (only run's if set), and returns them ("dir PATH").
func CleanupFiles(baseDir, run string) ([]string, error) {
	var removed, errs []string
	for _, dir := range runDirs(baseDir, run) {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		removed = append(removed, "dir "+dir)
	}
	if len(errs) > 0 {
		return removed, errors.New(strings.Join(errs, "; "))
	}
	return removed, nil
}

// runDirs are the labelled run directories under baseDir (run's only, if set).
func runDirs(baseDir, run string) []string {
	if baseDir == "" {
		baseDir = DefaultBaseDir()
	}
	labels, _ := filepath.Glob(filepath.Join(baseDir, "*", runLabelFile))
	slices.Sort(labels)
	var out []string
	for _, lf := range labels {
		b, _ := os.ReadFile(lf)
		if run != "" && strings.TrimSpace(string(b)) != run {
			continue
		}
		out = append(out, filepath.Dir(lf))
	}
	return out
}

// LeftoverDomains lists the labelled domains on the libvirtd at uri (run's only, if set):
// "domain NAME (running|defined)".
func LeftoverDomains(uri, run string) ([]string, error) {
	lv, err := connect(uri)
	if err != nil {
		return nil, err
	}
	defer lv.Disconnect()
	labels, err := Labelled(lv)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ld := range labels {
		if run != "" && ld.Label.Run != run {
			continue
		}
		state := "defined"
		if a, _ := lv.DomainIsActive(ld.Domain); a == 1 {
			state = "running"
		}
		out = append(out, "domain "+ld.Domain.Name+" ("+state+", run "+ld.Label.Run+")")
	}
	return out, nil
}

// LeftoverFiles lists the labelled run directories under baseDir (run's only, if set): "dir PATH".
func LeftoverFiles(baseDir, run string) []string {
	var out []string
	for _, d := range runDirs(baseDir, run) {
		out = append(out, "dir "+d)
	}
	return out
}

// LabelledDomain is a domain carrying the csconform label.
type LabelledDomain struct {
	Domain golibvirt.Domain
	Label  Label
}

// Labelled lists every domain (running or defined) that carries the csconform label, by name.
func Labelled(lv *golibvirt.Libvirt) ([]LabelledDomain, error) {
	doms, _, err := lv.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	if err != nil {
		return nil, err
	}
	var out []LabelledDomain
	for _, d := range doms {
		md, err := lv.DomainGetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{MetadataNS}, 0)
		if err != nil {
			continue // no label (or gone meanwhile)
		}
		if l, ok := parseLabel(md); ok {
			out = append(out, LabelledDomain{Domain: d, Label: l})
		}
	}
	slices.SortFunc(out, func(a, b LabelledDomain) int { return strings.Compare(a.Domain.Name, b.Domain.Name) })
	return out, nil
}
