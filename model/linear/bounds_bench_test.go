package linear

import (
	"fmt"
	"testing"
	"time"

	"github.com/csconform/csconform/model/history"
)

// timedHistory is n VMs, each deployed, crashed, seen as a ghost record within the bound, stopped by
// power sync and started again, every observation timed and with its record, as the harness writes
// them: the histories the bounded VM model reads.
func timedHistory(n int) []history.Event {
	es := []history.Event{at(0, hostE("", "Connecting")), at(0, hostE("Connecting", "Up"))}
	for i := range n {
		v := fmt.Sprintf("vm:%d", i+2)
		base := time.Duration(i) * time.Second
		es = append(es,
			at(base, callE(2*i+1, "c1", "network:1", "deploy web")), at(base, obsRec(v, false, "Starting")),
			at(base+3*time.Second, obsRec(v, true, "Running")), at(base+4*time.Second, ret(2*i+1, "c1", v, "ok")),
			at(base+time.Minute, fault("crash", v, true)), at(base+time.Minute, fault("crash", v, false)))
		for k := range 4 {
			es = append(es, at(base+time.Minute+time.Duration(k+1)*30*time.Second, obsRec(v, false, "Running")))
		}
		es = append(es, at(base+4*time.Minute, obsRec(v, false, "Stopped")),
			at(base+5*time.Minute, callE(2*i+2, "c2", v, "start web")), at(base+5*time.Minute+time.Second, obsRec(v, true, "Running")),
			at(base+5*time.Minute+2*time.Second, ret(2*i+2, "c2", v, "ok")))
	}
	return h(es...)
}

// BenchmarkCheckBounds is the staleness bound's cost: the same timed history checked unbounded and
// with CloudStack's default bounds (compare the two ns/op).
func BenchmarkCheckBounds(b *testing.B) {
	parts := Partitions(timedHistory(200))
	for _, c := range []struct {
		name   string
		bounds Bounds
	}{{"unbounded", Bounds{}}, {"bounded", runBounds}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if bad := Illegal(CheckWith(parts, 0, c.bounds)); len(bad) > 0 {
					b.Fatalf("%s illegal", bad[0].Object)
				}
			}
		})
	}
}
