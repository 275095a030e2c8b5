package explore

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
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

// TestInterruptedRunReportsWhatItExplored: a run stopped before its budget (Ctrl-C, a CI timeout's
// SIGTERM) writes its reports as a finished run does, marked interrupted, and never says it found
// nothing.
func TestInterruptedRunReportsWhatItExplored(t *testing.T) {
	s := &Summary{Profile: "fixed", Seed: 5, Budget: 100, Cases: 7, Interrupted: true}
	text := s.Text()
	if strings.Contains(text, "found nothing") || !strings.Contains(text, "interrupted after 7 of 100 cases, nothing found so far") {
		t.Fatalf("summary:\n%s", text)
	}
	dir := t.TempDir()
	if err := s.WriteReports(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Interrupted bool `json:"interrupted"`
		Cases       int  `json:"cases"`
		Found       bool `json:"found"`
	}
	if err := json.Unmarshal(data, &res); err != nil || !res.Interrupted || res.Cases != 7 || res.Found {
		t.Fatalf("result.json (%v):\n%s", err, data)
	}
	junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Errors     int `xml:"errors,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name  string `xml:"name,attr"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(junit, &suite); err != nil {
		t.Fatal(err)
	}
	interrupted := false
	for _, p := range suite.Properties {
		interrupted = interrupted || p.Name == "interrupted" && p.Value == "true"
	}
	if !interrupted || suite.Errors != len(suite.Cases) {
		t.Fatalf("junit.xml: want the property interrupted=true and an error on every case:\n%s", junit)
	}
	for _, c := range suite.Cases {
		if c.Error == nil || !strings.Contains(c.Error.Message, "interrupted after 7 of 100 cases") {
			t.Fatalf("junit.xml: case %s has no error saying the run was interrupted:\n%s", c.Name, junit)
		}
	}
	if summary, _ := os.ReadFile(filepath.Join(dir, "summary.txt")); string(summary) != text {
		t.Fatalf("summary.txt:\n%s", summary)
	}
}
