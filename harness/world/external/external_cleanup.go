package external

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/cloudclient"
)

// The external world's cleanup: what the run created goes, whatever the outcome (see external.go).

// ---- cleanup

// cleanup destroys and expunges every VM the run created, then deletes its networks: the ones it
// recorded, and any the API lists under the run's prefix (a call that failed after the server acted).
// It returns what is still there.
func (w *extWorld) cleanup() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := w.eo.API
	o.Sleep = func(d time.Duration) { harness.SleepCtx(ctx, time.Duration(float64(d)/w.eo.Speed)) }
	o.Now, o.Ctx = w.eo.Now, ctx
	cc := cloudclient.New(o)
	w.mu.Lock()
	vms := map[string]string{} // uuid -> what to call it
	for n, id := range w.vmIDs {
		vms[id] = w.prefix + n
	}
	nets := map[string]string{}
	for n, id := range w.netIDs {
		nets[id] = w.prefix + n
	}
	w.mu.Unlock()
	if all, err := cc.VMs(); err == nil {
		for _, v := range all {
			if strings.HasPrefix(v.Displayname, w.prefix) || strings.HasPrefix(v.Name, w.prefix) {
				vms[v.Id] = v.Displayname
			}
		}
	}
	if all, err := cc.Networks(); err == nil {
		for _, n := range all {
			if strings.HasPrefix(n.Name, w.prefix) {
				nets[n.Id] = n.Name
			}
		}
	}
	var left []string
	removed := 0
	for _, id := range slices.Sorted(maps.Keys(vms)) {
		if err := w.removeVM(cc, id); err != nil {
			left = append(left, fmt.Sprintf("VM %s (%s): %s", vms[id], id, w.redact(err.Error())))
		} else {
			removed++
		}
	}
	deleted := 0
	for _, id := range slices.Sorted(maps.Keys(nets)) {
		if err := w.removeNetwork(cc, id); err != nil {
			left = append(left, fmt.Sprintf("network %s (%s): %s", nets[id], id, w.redact(err.Error())))
		} else {
			deleted++
		}
	}
	w.logf("cleanup: %d VM(s) expunged or gone, %d network(s) deleted, %d left", removed, deleted, len(left))
	return left
}

// gone: the API does not know the VM (any more): no VM listed, or CloudStack's 431 for an id that
// does not exist.
func gone(err error) bool {
	return err != nil && (strings.HasPrefix(err.Error(), "no VM ") || strings.Contains(err.Error(), "entity does not exist"))
}

func (w *extWorld) removeVM(cc *cloudclient.Client, id string) error {
	for attempt := 0; attempt < 3; attempt++ {
		v, err := cc.VM(id)
		if gone(err) {
			return nil
		}
		if err != nil {
			return err
		}
		var job string
		switch v.State {
		case "Expunging":
			w.sleepWorld(5 * time.Second)
			continue
		case "Destroyed", "Error":
			job, err = cc.Expunge(id)
		default:
			job, err = cc.Destroy(id, true)
		}
		if err == nil {
			err = cc.Wait(job)
		}
		if err != nil {
			w.logf("cleanup: VM %s: %v (trying again)", id, w.redact(err.Error()))
			w.sleepWorld(5 * time.Second)
		}
	}
	if _, err := cc.VM(id); !gone(err) {
		return errors.New("still listed after three attempts to destroy and expunge it")
	}
	return nil
}

func (w *extWorld) removeNetwork(cc *cloudclient.Client, id string) error {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		p := cc.CS.Network.NewListNetworksParams()
		p.SetId(id)
		p.SetListall(true)
		l, err := cc.CS.Network.ListNetworks(p)
		if err == nil && l.Count == 0 || err != nil && strings.Contains(err.Error(), "entity does not exist") {
			return nil
		}
		job, err := cc.DeleteNetwork(id)
		if err == nil {
			err = cc.Wait(job)
		}
		if err == nil {
			return nil
		}
		last = err
		w.logf("cleanup: network %s: %v (trying again)", id, w.redact(err.Error()))
		w.sleepWorld(5 * time.Second)
	}
	return last
}

// strayDomains says which domains of the run's instances still run once the run removed what it
// created: CloudStack lost track of them (an orphaned domain) and the run only reads the hosts.
func (w *extWorld) strayDomains() []string {
	var out []string
	w.mu.Lock()
	inst := maps.Clone(w.instances)
	w.mu.Unlock()
	for _, h := range w.hosts {
		hd, err := h.Domains()
		if err != nil {
			continue
		}
		prefix := strings.ReplaceAll(w.eo.DomainPrefix, "{host}", hd.Host)
		for _, d := range hd.Domains {
			name := d.Instance
			if name == "" {
				name = strings.TrimPrefix(d.Name, prefix)
			}
			if d.Running && inst[name] {
				out = append(out, fmt.Sprintf("after cleanup: host %s still runs domain %s of this run, which CloudStack no longer manages; csconform only reads hosts: remove it by hand (virsh destroy %s; virsh undefine %s)", hd.Host, d.Name, d.Name, d.Name))
			}
		}
	}
	return out
}
