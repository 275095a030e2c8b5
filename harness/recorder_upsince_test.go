package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

// A host row written with its status unchanged (Up -Ping-> Up: HostDaoImpl.updateState writes the
// row on an investigation's Ping) is no coming back Up: the report grace keeps its start.
func TestHostSelfLoopIsNoComingBackUp(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRecorder(func() time.Time { return t0 })
	for _, e := range []struct {
		from, to string
		m        int
	}{{"Connecting", "Up", 0}, {"Up", "Alert", 2}, {"Alert", "Up", 5}, {"Up", "Up", 9}} {
		r.Emit(history.Event{Kind: history.State, Object: "host:h1", From: e.from, To: e.to, Detail: "test",
			Time: t0.Add(time.Duration(e.m) * time.Minute)})
	}
	assert.Equal(t, t0.Add(5*time.Minute), r.HostUpSince("h1"))
}
