package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/model/guard"
)

const lcGood = "2025-03-01 10:00:00,000 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-1:[ctx-1]) (logid:1) Lock is acquired for network id 5 as a part of network implement\n" +
	"2025-03-01 10:00:00,500 DEBUG [c.c.n.d.NetworkDaoImpl] (Work-Job-Executor-1:[ctx-1]) (logid:1) Network {\"id\": 5, \"name\": \"n\", \"uuid\": \"u\", \"networkofferingid\": 1} state transited from [Allocated] to [Implementing] with event [ImplementNetwork]\n" +
	"2025-03-01 10:00:02,000 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-1:[ctx-1]) (logid:1) Lock is released for network id 5 as a part of network implement\n"

const lcRace = "2025-03-01 10:00:00,000 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-1:[ctx-1]) (logid:1) Lock is acquired for network id 5 as a part of network implement\n" +
	"2025-03-01 10:00:01,000 INFO  [o.a.c.e.o.NetworkOrchestrator] (AsyncJobMgr-Heartbeat-1:[ctx-2]) (logid:2) Successfully transitioned orphaned network 5 to Shutdown state using state machine.\n" +
	"2025-03-01 10:00:02,000 DEBUG [o.a.c.e.o.NetworkOrchestrator] (Work-Job-Executor-1:[ctx-1]) (logid:1) Lock is released for network id 5 as a part of network implement\n"

const lcInfoOnly = "2025-03-01 10:00:00,000 INFO  [c.c.s.ManagementServerImpl] (main:null) Startup CloudStack management server\n"

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// TestLogcheckExitCodes: 0 nothing found, 1 a finding, 2 bad input (one clear line, never a panic),
// 3 nothing decidable; --help on stdout with 0.
func TestLogcheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.log", []byte(lcGood))
	race := writeFile(t, dir, "race.log", []byte(lcRace))
	info := writeFile(t, dir, "info.log", []byte(lcInfoOnly))
	empty := writeFile(t, dir, "empty.log", nil)
	garbage := writeFile(t, dir, "garbage.log", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00binary\x00\x01\x02\n\xff\xfe"))
	noNUL := writeFile(t, dir, "noise.log", []byte("\xde\xad\xbe\xef\nnot a log at all\n\xc3\x28\n"))
	full := gz([]byte(lcRace))
	truncated := writeFile(t, dir, "management-server.log.2025-02-24.gz", full[:len(full)-12])
	gzGood := writeFile(t, dir, "rotated.log.gz", gz([]byte(lcGood)))
	mixed := filepath.Join(dir, "mixed")
	os.Mkdir(mixed, 0o755)
	writeFile(t, mixed, "management-server.log", []byte(lcGood))
	writeFile(t, mixed, "notes.txt", []byte("operator notes"))
	writeFile(t, mixed, "vmops.log", []byte("\x00\x01\x02garbage"))
	noLogs := filepath.Join(dir, "nologs")
	os.Mkdir(noLogs, 0o755)
	writeFile(t, noLogs, "README", []byte("x"))
	long := writeFile(t, dir, "long.log", bytes.Repeat([]byte("a"), 2<<20))

	cases := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"help", []string{"--help"}, "", 0, "csconform logcheck FILE|DIR|- ... [flags]", ""},
		{"clean", []string{good}, "", 0, "no violation in the checks the log could decide", ""},
		{"finding", []string{race}, "", 1, "FINDING 1: network-lock on network:5", ""},
		{"gzip", []string{gzGood}, "", 0, "no violation", ""},
		{"stdin", []string{"-"}, lcRace, 1, "network-lock", ""},
		{"info only: undecided", []string{info}, "", 3, "NOT DECIDABLE", ""},
		{"empty file", []string{empty}, "", 2, "", "empty file"},
		{"binary garbage", []string{garbage}, "", 2, "", "binary data"},
		{"noise without NUL", []string{noNUL}, "", 2, "", "no log entries"},
		{"truncated gzip", []string{truncated}, "", 2, "", "truncated compressed data"},
		{"mixed directory", []string{mixed}, "", 2, "", "vmops.log"},
		{"directory without logs", []string{noLogs}, "", 2, "", "no management-server log in the directory"},
		{"missing file", []string{filepath.Join(dir, "nope.log")}, "", 2, "", "no such file"},
		{"line too long", []string{long}, "", 2, "", "line longer than"},
		{"no argument", nil, "", 2, "", "no log given"},
		{"bad flag", []string{"--bogus", good}, "", 2, "", "unknown flag: --bogus"},
		{"bad time", []string{good, "--since", "yesterday"}, "", 2, "", "bad time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := logcheckCmd(c.args, strings.NewReader(c.stdin), &out, &errb)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stdout %q / stderr %q, want %q / %q", out.String(), errb.String(), c.stdout, c.stderr)
			}
			if c.code == 2 && strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 && c.name != "no argument" {
				t.Errorf("bad input should be one line: %q", errb.String())
			}
		})
	}
}

// TestLogcheckDevZero: /dev/zero ends with a clear error instead of growing memory.
// TestLogcheckServerLogDirectory: /var/log/cloudstack/management/ as it is — the live log, a gzipped
// rotation, Jetty's access log, the API log, the service's stdout, a subdirectory — is judged on its
// two management-server logs, each other entry skipped with one line saying so.
func TestLogcheckServerLogDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "management")
	os.Mkdir(dir, 0o755)
	writeFile(t, dir, "management-server.log", []byte(lcGood))
	writeFile(t, dir, "management-server.log.2025-02-28.gz", gz([]byte(strings.NewReplacer("2025-03-01", "2025-02-28", "id 5", "id 6", `"id": 5`, `"id": 6`).Replace(lcGood)+
		`2025-02-28 10:00:01,000 DEBUG [c.c.n.d.NetworkDaoImpl] (Work-Job-Executor-1:[ctx-1]) (logid:1) Network {"id": 6, "name": "n", "uuid": "u", "networkofferingid": 1} state transited from [Implementing] to [Implemented] with event [OperationSucceeded]`+"\n")))
	writeFile(t, dir, "access.log", []byte(`127.0.0.1 - - [01/Mar/2025:10:00:00 +0000] "GET /client/api?command=listZones HTTP/1.1" 200 512`+"\n"))
	writeFile(t, dir, "apilog.log", []byte("2025-03-01 10:00:00,000 INFO  [a.c.c.a.ApiServer] (qtp-1:ctx-1) 127.0.0.1 -- GET command=listZones 200\n"))
	writeFile(t, dir, "management-server.out", []byte("starting\n"))
	os.Mkdir(filepath.Join(dir, "archive"), 0o755)
	var out, errb bytes.Buffer
	if code := logcheckCmd([]string{dir}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if !strings.HasPrefix(out.String(), "logcheck: 2 file(s)") {
		t.Errorf("stdout: %s", out.String())
	}
	for _, n := range []string{"access.log", "apilog.log", "management-server.out", "archive"} {
		if c := strings.Count(out.String(), "skipped "+filepath.Join(dir, n)+": "); c != 1 {
			t.Errorf("%s: %d skip lines, want 1\n%s", n, c, out.String())
		}
	}
	// the same with --json: the skipped files and why
	out.Reset()
	if code := logcheckCmd([]string{dir, "--json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	var rep struct {
		Files   []string
		Skipped []struct{ Path, Reason string }
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Files) != 2 || len(rep.Skipped) != 4 {
		t.Errorf("json: %v %+v", err, rep)
	}
}

func TestLogcheckDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	var out, errb bytes.Buffer
	if code := logcheckCmd([]string{"/dev/zero"}, nil, &out, &errb); code != 2 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "/dev/zero") {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestLogcheckJSONAndReports(t *testing.T) {
	dir := t.TempDir()
	race := writeFile(t, dir, "race.log", []byte(lcRace))
	var out, errb bytes.Buffer
	outDir := filepath.Join(dir, "out")
	junit := filepath.Join(dir, "junit.xml")
	if code := logcheckCmd([]string{race, "--json", "--out", outDir, "--junit", junit}, nil, &out, &errb); code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Findings []struct {
			Check, Object string
			Evidence      []struct{ Origin string }
		}
		Coverage []struct {
			Check     string
			Decidable bool
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	// the lock check, and the orphan cleanup's transition guard (it wrote under the implementer's lock)
	if len(rep.Findings) != 2 || rep.Findings[0].Evidence[1].Origin != race+":2" || rep.Findings[1].Check != "transition-guard" {
		t.Errorf("findings %+v", rep.Findings)
	}
	for _, f := range []string{"report.txt", "report.json", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(outDir, f)); err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(junit)
	if !strings.Contains(string(b), `<failure message="network:5`) || !strings.Contains(string(b), "<skipped") {
		t.Errorf("junit: %s", b)
	}
	// --events: the extracted history, one JSON event a line, with origins
	evFile := filepath.Join(dir, "events.jsonl")
	out.Reset()
	if code := logcheckCmd([]string{race, "--events", evFile}, nil, &out, &errb); code != 1 {
		t.Fatalf("--events: exit %d: %s", code, errb.String())
	}
	evs, _ := os.ReadFile(evFile)
	if lines := strings.Split(strings.TrimSpace(string(evs)), "\n"); len(lines) < 3 || !strings.Contains(lines[0], `"kind":"lock"`) || !strings.Contains(lines[0], "race.log:1") {
		t.Errorf("events:\n%s", evs)
	}
	// --until before the race: nothing found
	out.Reset()
	if code := logcheckCmd([]string{race, "--until", "2025-03-01 10:00:00"}, nil, &out, &errb); code != 0 && code != 3 {
		t.Errorf("--until: exit %d\n%s", code, out.String())
	}
}

// TestLogcheckRender: a reference run's history, written as a log in either style, judged by
// logcheck: seed-000-ab's D1 race is found as network-lock in both.
func TestLogcheckRender(t *testing.T) {
	dir := t.TempDir()
	h := filepath.Join(dir, "h.jsonl")
	var out, errb bytes.Buffer
	if code := run([]string{"repro", "seed-000-ab", "--history", h}, &out, &errb); code != 1 {
		t.Fatalf("repro: exit %d: %s", code, errb.String())
	}
	for _, style := range []string{"4.22", "4.5"} {
		out.Reset()
		if code := logcheckCmd([]string{"--render", h, "--style", style}, nil, &out, &errb); code != 0 {
			t.Fatalf("render: exit %d: %s", code, errb.String())
		}
		log := writeFile(t, dir, "management-server-"+style+".log", out.Bytes())
		out.Reset()
		if code := logcheckCmd([]string{log}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "network-lock on network:") {
			t.Errorf("style %s: exit %d\n%s", style, code, out.String())
		}
	}
	if code := logcheckCmd([]string{"--render", h, "--style", "3.0"}, nil, &out, &errb); code != 2 {
		t.Errorf("bad style: exit %d", code)
	}
}

// logcheck's --setting and --default-settings give the transition guards the logged server's
// settings; a setting neither gives stays unknown, and a wrong one is refused.
func TestLogcheckGuardSettings(t *testing.T) {
	for _, tc := range []struct {
		settings []string
		defaults bool
		want     guard.Config
		err      string
	}{
		{nil, false, guard.Config{}, ""},
		{[]string{"ping.interval=30"}, false, guard.Config{PingInterval: 30 * time.Second}, ""},
		{[]string{"ping.interval=30", "ping.timeout=3"}, false, guard.Config{PingInterval: 30 * time.Second, PingTimeout: 90 * time.Second}, ""},
		{[]string{"job.expire.minutes=5"}, false, guard.Config{JobExpire: 5 * time.Minute}, ""},
		{nil, true, guard.Config{PingInterval: time.Minute, PingTimeout: 150 * time.Second, GCWait: 600 * time.Second, JobExpire: 1440 * time.Minute, JobCancel: 60 * time.Minute, Wait: 1800 * time.Second}, ""},
		{[]string{"wait=300"}, false, guard.Config{Wait: 300 * time.Second}, ""},
		{[]string{"router.ready.timeout=5"}, false, guard.Config{}, "KEY one of"},
		{[]string{"ping.interval"}, false, guard.Config{}, "KEY=VALUE"},
		{[]string{"ping.interval=x"}, false, guard.Config{}, "--setting"},
	} {
		got, err := guardSettings(tc.settings, tc.defaults)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.settings, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v defaults=%v: %+v, %v; want %+v", tc.settings, tc.defaults, got, err, tc.want)
		}
	}
}
