package container

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

// The server's history does not say it restarted; the harness's fault does, and the guards need it
// (a restarted server's threads are gone with their locks): it goes in by time, all numbered anew.
func TestWithRestartsMergesTheServersRestartsByTime(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	server := []history.Event{
		{Seq: 1, Time: at(1), Kind: history.Lock, Actor: "Work-Job-Executor-1", Object: "networks1", To: "held"},
		{Seq: 2, Time: at(10), Kind: history.State, Actor: "Network-Scavenger", Object: "network:1", From: "Implemented", To: "Shutdown"},
	}
	harnessEvents := []history.Event{
		{Seq: 7, Time: at(0), Kind: history.Call, Actor: "client-1", Object: "network:1"},
		{Seq: 8, Time: at(5), Kind: history.Fault, Actor: "fault", Object: "ms", To: "ms-restart"},
		{Seq: 9, Time: at(6), Kind: history.Fault, Actor: "fault", Object: "host:h1", To: "disconnect"},
		{Seq: 10, Time: at(20), Kind: history.Fault, Actor: "fault", Object: "ms", To: "ms-restart"},
	}
	got := withRestarts(server, slices.Values(harnessEvents))
	var kinds []string
	for i, e := range got {
		assert.Equal(t, int64(i+1), e.Seq)
		kinds = append(kinds, string(e.Kind)+" "+e.To)
	}
	assert.Equal(t, []string{"lock held", "fault ms-restart", "state Shutdown", "fault ms-restart"}, kinds)
}
