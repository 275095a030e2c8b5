package explore

import (
	"strings"
	"testing"

	"github.com/csconform/csconform/model/history"
)

// TestUndecidedCasesAreNotLinearizable: an exploration whose checker timed out on some case says so,
// and never that every object's history is linearizable.
func TestUndecidedCasesAreNotLinearizable(t *testing.T) {
	s := &Summary{Profile: "fixed", Cases: 10, Undecided: 2}
	text := s.Text()
	if strings.Contains(text, "every object's history linearizable") || !strings.Contains(text, "2 case(s) UNDECIDED") {
		t.Fatalf("summary:\n%s", text)
	}
	if j := string(s.JUnit()); !strings.Contains(j, `<skipped message="undecided in 2 case(s)`) {
		t.Fatalf("junit:\n%s", j)
	}
}

// Faults become windows from their begin to their end (an open one to the last event), for the
// porcupine pages.
func TestFaultWindows(t *testing.T) {
	es := []history.Event{
		{Seq: 1, Kind: history.Call},
		{Seq: 2, Kind: history.Fault, Object: "host:h1", To: "disconnect"},
		{Seq: 5, Kind: history.Fault, Object: "vm:3", To: "crash"},
		{Seq: 7, Kind: history.Fault, Object: "host:h1", From: "disconnect"},
		{Seq: 9, Kind: history.Return},
	}
	got := faultWindows(es)
	if len(got) != 2 || got[0].Start != 2 || got[0].End != 7 || got[0].Description != "disconnect host:h1" ||
		got[1].Start != 5 || got[1].End != 9 {
		t.Fatalf("windows %+v", got)
	}
}
