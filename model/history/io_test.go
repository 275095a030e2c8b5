package history

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestReadRefusesWhatTheCheckersCannotTrust(t *testing.T) {
	call := `{"seq":1,"kind":"call","op":1,"object":"vm:1","detail":"start web1"}`
	cases := []struct {
		name, input string
		want        string // in the error; "" for none
	}{
		{"a call and its return", call + "\n" + `{"seq":2,"kind":"return","op":1,"object":"vm:1","to":"ok"}`, ""},
		{"blank lines and CRLF", "\r\n" + call + "\r\n\r\n", ""},
		{"no events", "\n\n", "x.jsonl: no events"},
		{"not JSON", "hello", "x.jsonl:1: not a history event"},
		{"an unknown field", `{"seq":1,"kind":"log","colour":"red"}`, `x.jsonl:1: not a history event: json: unknown field "colour"`},
		{"two values on a line", `{"seq":1,"kind":"log"} {"seq":2,"kind":"log"}`, "x.jsonl:1: not a history event: more than one JSON value"},
		{"garbage after the value", `{"seq":1,"kind":"log"} x`, "x.jsonl:1: not a history event"},
		{"no kind", `{"seq":1}`, "x.jsonl:1: not a history event: no kind"},
		{"an unknown kind", `{"seq":1,"kind":"tweet"}`, `unknown kind "tweet"`},
		{"no seq", `{"kind":"log"}`, "x.jsonl:1: not a history event: no seq"},
		{"seq going back", call + "\n" + `{"seq":1,"kind":"log"}`, "x.jsonl:2: not a history event: seq 1 after seq 1"},
		{"an op called twice", call + "\n" + strings.Replace(call, `"seq":1`, `"seq":2`, 1), "x.jsonl:2: not a history event: op 1 called twice"},
		{"a return without its call", `{"seq":1,"kind":"return","op":3,"to":"ok"}`, "a return of op 3, which is not an open call"},
		{"a return twice", call + "\n" + `{"seq":2,"kind":"return","op":1,"to":"ok"}` + "\n" + `{"seq":3,"kind":"return","op":1,"to":"ok"}`, "x.jsonl:3: not a history event: a return of op 1"},
		{"a return neither ok nor failed", call + "\n" + `{"seq":2,"kind":"return","op":1,"to":"maybe"}`, `ok or failed, not "maybe"`},
		{"a lock neither held nor released", `{"seq":1,"kind":"lock","object":"networks1","to":"stolen"}`, `held or released, not "stolen"`},
		{"an address change on a VM (issue 16)", `{"seq":1,"actor":"ms","kind":"ip","object":"vm:1","from":"free","to":"vm:1"}`, `x.jsonl:1: not a history event: an ip event is about an address (ip:A), not "vm:1"`},
		{"an observation of two VMs at once", `{"seq":1,"kind":"observe","object":"vm:1,vm:2","to":"on/live"}`, `x.jsonl:1: not a history event: an event of kind observe is about one object, not "vm:1,vm:2"`},
		{"an observation of a network", `{"seq":1,"kind":"observe","object":"network:1","to":"on/live"}`, `an observation is of a VM (vm:N) or an address (ip:A), not "network:1"`},
		{"a VM observation in no known form", `{"seq":1,"kind":"observe","object":"vm:1","to":"running"}`, `not "running"`},
		{"an address observation with an empty user", `{"seq":1,"kind":"observe","object":"ip:10.0.0.1","to":"vm:1,"}`, `none empty, not "vm:1,"`},
		// handled soundly by the partitioner (model/linear), so not refused
		{"a lock named networks1|b and a write by b|c (issue 16)", `{"seq":1,"actor":"c","kind":"lock","object":"networks1|b","to":"held"}
{"seq":2,"actor":"b|c","kind":"state","object":"network:1","to":"Allocated","lockHolder":"b|c"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.input), "x.jsonl", Limits{})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted, want an error with %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q, want %q in it", err, c.want)
			}
		})
	}
}

func TestReadCaps(t *testing.T) {
	ev := `{"seq":1,"kind":"log","detail":"` + strings.Repeat("x", 200) + `"}`
	cases := []struct {
		name  string
		input string
		lim   Limits
		want  string
	}{
		{"a line over the line cap", `{"seq":1,"kind":"log"}` + "\n" + ev + "\n", Limits{MaxLine: 100}, "x.jsonl:2: line longer than the cap of 100 bytes"},
		{"the last line over the cap, no newline", ev, Limits{MaxLine: 100}, "x.jsonl:1: line longer than the cap of 100 bytes"},
		{"a line exactly at the cap", ev, Limits{MaxLine: len(ev)}, ""},
		{"a line one byte over", ev, Limits{MaxLine: len(ev) - 1}, "x.jsonl:1: line longer than the cap"},
		{"an input over the total cap", ev + "\n" + strings.Replace(ev, `"seq":1`, `"seq":2`, 1), Limits{MaxTotal: 300}, "x.jsonl: longer than the cap of 300 bytes"},
		{"an input exactly at the total cap", ev, Limits{MaxTotal: int64(len(ev))}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.input), "x.jsonl", c.lim)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q in it", err, c.want)
			}
		})
	}
}

// zeros is /dev/zero.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadEndlessInputStops: an endless input without a newline (/dev/zero) stops at the line cap,
// having read little more than it; one of endless blank lines stops at the total cap.
func TestReadEndlessInputStops(t *testing.T) {
	z := &zeros{}
	_, err := Read(z, "/dev/zero", Limits{MaxLine: 1 << 16})
	if err == nil || !strings.Contains(err.Error(), "/dev/zero:1: line longer than the cap of 65536 bytes") {
		t.Fatalf("error %v", err)
	}
	if z.n > 1<<18 {
		t.Errorf("read %d bytes for a cap of 64 KiB", z.n)
	}
	nl := io.MultiReader(strings.NewReader(`{"seq":1,"kind":"log"}`), newlines{})
	_, err = Read(nl, "nl", Limits{MaxTotal: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "nl: longer than the cap of 1048576 bytes") {
		t.Fatalf("error %v", err)
	}
}

type newlines struct{}

func (newlines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '\n'
	}
	return len(p), nil
}

func TestWriteReadRoundTrip(t *testing.T) {
	in := []Event{
		{Seq: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Actor: "c1", Kind: Call, Object: "network:1", Op: 1, Detail: "deploy web1"},
		{Seq: 2, Actor: "w1", Kind: Lock, Object: "networks1", To: "held"},
		{Seq: 3, Actor: "w1", Kind: State, Object: "network:1", From: "Allocated", To: "Implementing", LockHolder: "w1", Direct: true},
		{Seq: 4, Actor: "c1", Kind: Return, Op: 1, Object: "vm:2", To: "failed", Detail: "deploy: no capacity"},
		{Seq: 5, Actor: "observer", Kind: Observe, Object: "vm:2", To: "off/live"},
	}
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(&b, "h", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameEvents(in, out) {
		t.Fatalf("read back\n%+v\nwant\n%+v", out, in)
	}
}

func sameEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Time.Equal(y.Time) {
			return false
		}
		x.Time, y.Time = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// FuzzRead: Read never panics, keeps to its caps, and what it accepts is written back and read again
// as the same events.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"seq":1,"kind":"call","op":1,"object":"vm:1","detail":"start web1"}` + "\n" + `{"seq":2,"kind":"return","op":1,"object":"vm:1","to":"ok"}`))
	f.Add([]byte(`{"seq":1,"time":"2026-01-02T03:04:05.000000006+01:00","kind":"observe","object":"ip:10.0.0.1","to":"vm:1,vm:2"}` + "\r\n\n"))
	f.Add([]byte(`{"seq":1,"kind":"log","detail":"` + strings.Repeat("y", 300) + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxLine: 256, MaxTotal: 4096}
		events, err := Read(bytes.NewReader(data), "f", lim)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") && !strings.HasPrefix(err.Error(), "f: ") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		if len(data) > 4096 {
			t.Fatalf("accepted %d bytes over a cap of 4096", len(data))
		}
		var v Validator
		for _, e := range events {
			if err := v.Check(e); err != nil {
				t.Fatalf("Read accepted what the validator refuses: %v", err)
			}
		}
		var b bytes.Buffer
		if err := Write(&b, events); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&b, "again", Limits{})
		if err != nil {
			t.Fatalf("what Read accepted does not read back: %v", err)
		}
		if !sameEvents(events, again) {
			t.Fatalf("read back\n%+v\nwant\n%+v", again, events)
		}
	})
}

func TestLastSeq(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/h.jsonl"
	if n, err := LastSeq(p); n != 0 || err != nil {
		t.Fatalf("no file: %d, %v", n, err)
	}
	if err := WriteFile(p, []Event{{Seq: 1, Kind: Log}, {Seq: 7, Kind: Log, Detail: "x"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := LastSeq(p); n != 7 || err != nil {
		t.Fatalf("got %d, %v, want 7", n, err)
	}
	if err := os.WriteFile(p, []byte("{\"seq\":1,\"kind\":\"log\"}\n{\"seq\":2,\"ki"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := LastSeq(p); n != 1 || err != nil {
		t.Fatalf("a cut last line: %d, %v, want 1", n, err)
	}
	if err := os.WriteFile(p, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LastSeq(p); err == nil || !strings.Contains(err.Error(), "no history event in its last 7 bytes") {
		t.Fatalf("no event: %v", err)
	}
}
