package linear

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/csconform/csconform/model/history"
)

// TestHostsSettleKeptAsTheScanAnswers: the builder keeps hostsSettle's answer as host events come;
// it must say what a scan of every host's state says, also for a history out of time order.
func TestHostsSettleKeptAsTheScanAnswers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := builder{hosts: map[string]*hostSeen{}}
		for i, n := 0, rapid.IntRange(1, 40).Draw(t, "events"); i < n; i++ {
			id := rapid.SampledFrom([]string{"h1", "h2", "h3"}).Draw(t, "host")
			to := rapid.SampledFrom([]string{"Up", "Disconnected", "Alert"}).Draw(t, "to")
			at := t0.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "minute")) * time.Minute)
			b.hostState(id, history.Event{Kind: history.State, Object: "host:" + id, To: to, Time: at})
			allUp, upSince := b.hostsSettle()
			wantUp, wantSince := true, int64(0)
			for _, h := range b.hosts {
				wantUp = wantUp && h.up
				if !h.upSince.IsZero() {
					wantSince = max(wantSince, h.upSince.UnixNano())
				}
			}
			if allUp != wantUp || upSince != wantSince {
				t.Fatalf("after %d events: hostsSettle says (%v, %d), the scan (%v, %d)", i+1, allUp, upSince, wantUp, wantSince)
			}
		}
	})
}

// A host row written with its status unchanged (Up -Ping-> Up: HostDaoImpl.updateState writes the
// row on an investigation's Ping) is no coming back Up: the report grace keeps its start.
func TestHostSelfLoopKeepsUpSince(t *testing.T) {
	b := builder{hosts: map[string]*hostSeen{}}
	ev := func(from, to string, m int) history.Event {
		return history.Event{Kind: history.State, Object: "host:h1", From: from, To: to, Time: t0.Add(time.Duration(m) * time.Minute)}
	}
	for _, e := range []history.Event{ev("Connecting", "Up", 0), ev("Up", "Alert", 2), ev("Alert", "Up", 5), ev("Up", "Up", 9)} {
		b.hostState("h1", e)
	}
	allUp, since := b.hostsSettle()
	if !allUp || since != t0.Add(5*time.Minute).UnixNano() {
		t.Fatalf("hostsSettle says (%v, %s), want Up since +5m", allUp, time.Unix(0, since).Sub(t0))
	}
}
