package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/live"
	"github.com/csconform/csconform/model/history"
)

// hardHistory is a network whose n threads hold its lock at once, each writing A→A, and one more
// writing B→C: no order explains it, and porcupine tries the 2^n orders of the others first, so it
// cannot decide it in a few milliseconds.
func hardHistory(n int) []history.Event {
	var es []history.Event
	add := func(e history.Event) { e.Seq = int64(len(es) + 1); es = append(es, e) }
	add(history.Event{Kind: history.State, Actor: "api", Object: "network:1", To: "A"})
	write := func(actor, from, to string) {
		add(history.Event{Kind: history.Lock, Actor: actor, Object: "networks1", To: "held"})
		add(history.Event{Kind: history.State, Actor: actor, Object: "network:1", From: from, To: to, LockHolder: actor})
	}
	for i := range n {
		write(fmt.Sprintf("w%d", i), "A", "A")
	}
	write("x", "B", "C")
	for i := range n {
		add(history.Event{Kind: history.Lock, Actor: fmt.Sprintf("w%d", i), Object: "networks1", From: "held", To: "released"})
	}
	add(history.Event{Kind: history.Lock, Actor: "x", Object: "networks1", From: "held", To: "released"})
	return es
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hard := filepath.Join(dir, "hard.jsonl")
	if err := history.WriteFile(hard, hardHistory(24)); err != nil {
		t.Fatal(err)
	}
	hardViolation := filepath.Join(dir, "hard-violation.jsonl")
	es := hardHistory(24)
	es = append(es, history.Event{Seq: int64(len(es) + 1), Kind: history.Violation, Actor: "checker", Object: "network:1", To: "network-lock", Detail: "x"})
	if err := history.WriteFile(hardViolation, es); err != nil {
		t.Fatal(err)
	}
	// issue 16's reproducers: both panicked
	lockPipe := file("lock-pipe.jsonl", `{"seq":1,"actor":"c","kind":"lock","object":"networks1|b","to":"held"}
{"seq":2,"actor":"b|c","kind":"state","object":"network:1","to":"Allocated","lockHolder":"b|c"}
`)
	ipOnVM := file("ip-on-vm.jsonl", `{"seq":1,"actor":"ms","kind":"ip","object":"vm:1","from":"free","to":"vm:1"}
{"seq":2,"actor":"observer","kind":"observe","object":"vm:1","to":"on/live"}
`)
	ok := `{"seq":1,"kind":"log","detail":"hello"}` + "\n"
	long := file("long.jsonl", ok+`{"seq":2,"kind":"log","detail":"`+strings.Repeat("x", 300)+`"}`+"\n")
	runCLICases(t, []cliCase{
		{[]string{"check", lockPipe}, exitOK, "every partition is linearizable"},
		{[]string{"check", ipOnVM}, exitBadInput, "ip-on-vm.jsonl:1: not a history event: an ip event is about an address (ip:A), not \"vm:1\""},
		{[]string{"check", "--timeout", "50ms", hard}, exitUndecided, "1 partitions undecided: no answer within 50ms each"},
		{[]string{"check", "--timeout", "50ms", "--json", hard}, exitUndecided, `"verdict": "unknown"`},
		{[]string{"check", "--timeout", "50ms", hardViolation}, exitFound, "INVARIANT network-lock"},
		{[]string{"check", "--timeout", "-1s", hard}, exitBadInput, "--timeout must not be negative"},
		{[]string{"check", "--max-line", "100", long}, exitBadInput, "long.jsonl:2: line longer than the cap of 100 bytes"},
		{[]string{"check", "--max-input", "200", long}, exitBadInput, "long.jsonl: longer than the cap of 200 bytes"},
		{[]string{"check", "--max-input", "1KiB", long}, exitOK, "2 events"},
		{[]string{"check", "--max-input", "lots", long}, exitBadInput, "--max-input: want a size"},
		{[]string{"check", "/dev/zero"}, exitBadInput, "/dev/zero:1: line longer than the cap of 1048576 bytes"},
	})
}

// An undecided object is its own exit status, below a finding (repro's summary of it is
// verdict.TestUndecidedIsNeverLinearizable's).
func TestUndecidedExit(t *testing.T) {
	for _, c := range []struct {
		found, undecided bool
		want             int
	}{{false, false, exitOK}, {true, false, exitFound}, {false, true, exitUndecided}, {true, true, exitFound}} {
		if got := verdictExit(c.found, c.undecided); got != c.want {
			t.Errorf("verdictExit(%v, %v) = %d, want %d", c.found, c.undecided, got, c.want)
		}
	}
}

// TestRestartedServerHistoryReads: a server restarted on the same --history file numbers on, so the
// file stays one csconform check reads (it numbered from 1 again, which check refuses).
func TestRestartedServerHistoryReads(t *testing.T) {
	p := filepath.Join(t.TempDir(), "server.jsonl")
	for range 2 {
		s, closeSink, err := live.NewLogSink(io.Discard, false, p)
		if err != nil {
			t.Fatal(err)
		}
		s.Emit(history.Event{Kind: history.Log, Actor: "ms", Detail: "started"})
		s.Emit(history.Event{Kind: history.Lock, Actor: "w1", Object: "networks1", To: "held"})
		closeSink()
	}
	es, err := history.ReadFile(p, history.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 || es[3].Seq != 4 {
		t.Fatalf("read %+v", es)
	}
}

// check judges a saved history's transitions against the guards again: a history from a world that
// recorded no verdict (or an older csconform) with a job expunged an hour after its creation is a
// finding with the settings given, NOT DECIDABLE without them.
func TestCheckJudgesTheTransitionGuards(t *testing.T) {
	t0 := time.Date(2026, 10, 29, 0, 0, 0, 0, time.UTC)
	es := []history.Event{
		{Seq: 1, Time: t0, Actor: "API-Job-Executor-1", Kind: history.State, Object: "job:5", To: "IN_PROGRESS", Detail: "VmWorkStart VirtualMachine:2"},
		{Seq: 2, Time: t0.Add(time.Hour), Actor: "AsyncJobMgr-Heartbeat-2", Kind: history.State, Object: "job:5", From: "IN_PROGRESS", To: "Expunged", Detail: "VmWorkStart"},
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := history.WriteFile(path, es); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := checkCmd(&checkOpts{timeout: time.Second, maxInput: "1GiB", maxLine: "1MiB"}, []string{path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "NOT DECIDABLE job-expunge-after-expire") {
		t.Errorf("without settings: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := checkCmd(&checkOpts{timeout: time.Second, maxInput: "1GiB", maxLine: "1MiB", defaultSettings: true}, []string{path}, &out, &errb); code != 1 || !strings.Contains(out.String(), "job-expunge-after-expire") {
		t.Errorf("with the defaults (job.expire.minutes 1440): exit %d\n%s%s", code, out.String(), errb.String())
	}
}
