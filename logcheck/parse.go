// Package logcheck reads CloudStack management-server.log files (every 4.x form of the line: its
// skeleton, logger and thread styles, object renderings; docs/operators.md), extracts the events they
// carry into model/history, and judges them with the invariants a log can decide and with the
// porcupine models of model/linear.
//
// Reading is streaming: one pending entry per input, per-object state bounded by the objects still
// open, never the whole log.
package logcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// MaxLine is the longest physical line accepted; a longer one is bad input (a log4j line is a few KB
// at most, a binary file or /dev/zero has no newline at all).
const MaxLine = 1 << 20

// maxMsg caps what continuation (hard-wrapped) lines add to one entry's message.
const maxMsg = 16 << 10

// Entry is one log entry: a header line and the continuation lines (stack frames, wrapped text)
// that follow it.
type Entry struct {
	Time    time.Time
	HasTime bool   // false for a line with no (usable) timestamp, kept for its order only: a journald line before any year, grep output without stamps
	Level   string // DEBUG, INFO, WARN, ERROR, TRACE, FATAL
	Logger  string // as written: c.c.v.VirtualMachinePowerStateSyncImpl or cloud.vm.…
	Thread  string // Work-Job-Executor-4
	Context string // ctx-… job-40/job-41, or [ctx-…, job-40/job-41], or null
	LogID   string // "" when absent or empty
	Msg     string
	Host    string // host-name prefix, if the line carried one
	File    string
	Line    int // the header's line number
	Frames  int // continuation lines (stack frames) after the header
	Raw     string
}

// Origin is file:line.
func (e *Entry) Origin() string { return e.File + ":" + strconv.Itoa(e.Line) }

// InputError is bad input: the run stops and exits 2.
type InputError struct {
	File string
	Line int
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Stats counts what a reader saw.
type Stats struct {
	Lines      int64 `json:"lines"` // physical lines
	Bytes      int64 `json:"bytes"`
	Entries    int64 `json:"entries"`
	Orphans    int64 `json:"orphans"`    // continuation lines before any header
	Continued  int64 `json:"continued"`  // continuation lines attached to an entry
	Unknown    int64 `json:"unknown"`    // entries of no kind the extractor knows
	NoState    int64 `json:"noState"`    // entries of a known kind that carries nothing a check reads (KNoState, KStorage)
	Malformed  int64 `json:"malformed"`  // entries that look like a known kind but do not parse
	Unparsable int64 `json:"unparsable"` // lines that are neither a header nor a continuation of one
	// Debug counts the entries at DEBUG or TRACE: a log that has them was written at DEBUG, and lacks
	// the checks' lines for another reason than its level
	Debug int64 `json:"debug,omitempty"`
}

// Reader reads entries from one log stream.
type Reader struct {
	name    string
	br      *bufio.Reader
	lineNo  int
	pending *Entry // the entry being assembled (its continuation lines may follow)
	err     error
	Stats   Stats
	year    int    // for journald lines, which carry no year: the last year seen
	rest    []byte // the rest of a physical line that held a second entry (a copy that lost a newline)
}

// NewReader reads a plain-text log; name is its origin in reports.
func NewReader(name string, r io.Reader) *Reader {
	return &Reader{name: name, br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next entry, io.EOF at the end, or an *InputError.
func (r *Reader) Next() (*Entry, error) {
	for {
		if r.err != nil {
			if r.pending != nil && r.err == io.EOF {
				e := r.pending
				r.pending = nil
				return finish(e), nil
			}
			return nil, r.err
		}
		var line []byte
		if r.rest != nil {
			line, r.rest = r.rest, nil // the same physical line: counted once
		} else {
			l, err := r.readLine()
			if err != nil {
				r.err = err
				continue
			}
			line = l
			r.Stats.Lines++
			r.Stats.Bytes += int64(len(line)) + 1
		}
		if bytes.IndexByte(line, 0) >= 0 {
			if r.Stats.Entries == 0 {
				r.err = &InputError{File: r.name, Line: r.lineNo, Msg: "binary data (NUL byte): not a text log"}
				continue
			}
			// a log copied while written, or a crash, leaves NUL padding: skip it, counted
			r.Stats.Unparsable++
			continue
		}
		e, ok := r.header(line)
		if ok {
			r.Stats.Entries++
			if e.Level == "DEBUG" || e.Level == "TRACE" {
				r.Stats.Debug++
			}
			prev := r.pending
			r.pending = e
			if prev != nil {
				return finish(prev), nil
			}
			continue
		}
		// not a header: a stack frame, a "Caused by", a wrapped line, or noise
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if i := gluedHeader(line); i > 0 {
			// a copy lost the newline before an entry ("…not retrying2023-01-05 18:26:54,158 DEBUG …"):
			// the text before it continues the pending entry, the entry is read on its own
			r.rest, line = line[i:], line[:i]
		}
		if r.pending == nil {
			r.Stats.Orphans++
			continue
		}
		r.Stats.Continued++
		r.pending.Frames++
		if !isFrame(line) && len(r.pending.Msg) < maxMsg {
			// a hard-wrapped line continues the message (on the journal, what follows "java[pid]: ")
			if j := bytes.Index(line, []byte("]: ")); j > 0 && j < 96 && journaldPrefix(line[:j]) {
				line = line[j+3:]
			}
			r.pending.Msg += " " + string(bytes.TrimSpace(line))
		}
	}
}

// readLine returns one line without its newline; a line longer than MaxLine is an error, so that
// no input makes the reader grow without bound.
func (r *Reader) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLine {
			return nil, &InputError{File: r.name, Line: r.lineNo + 1, Msg: fmt.Sprintf("line longer than %d bytes: not a management-server.log", MaxLine)}
		}
		switch {
		case err == nil:
			r.lineNo++
			if buf != nil {
				chunk = append(buf, chunk...)
			}
			return trimEOL(chunk), nil
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
		case err == io.EOF:
			if len(buf)+len(chunk) == 0 {
				return nil, io.EOF
			}
			r.lineNo++
			return trimEOL(append(buf, chunk...)), nil
		default:
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, &InputError{File: r.name, Line: r.lineNo + 1, Msg: "truncated compressed data (unexpected EOF)"}
			}
			return nil, &InputError{File: r.name, Line: r.lineNo + 1, Msg: err.Error()}
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

func isFrame(line []byte) bool {
	if j := bytes.Index(line, []byte("]: ")); j > 0 && j < 96 && journaldPrefix(line[:j]) {
		line = line[j+3:] // a frame on the journal: "Sep 03 01:12:08 host java[2720]: \tat org.…"
	}
	t := bytes.TrimLeft(line, " \t")
	return bytes.HasPrefix(t, []byte("at ")) || bytes.HasPrefix(t, []byte("Caused by")) ||
		bytes.HasPrefix(t, []byte("...")) || (len(t) < len(line) && len(line) > 0 && line[0] == '\t')
}

// journaldPrefix says whether p is "Mon DD HH:MM:SS host proc[pid" (a journal line before "]: ").
func journaldPrefix(p []byte) bool {
	return len(p) > 16 && p[3] == ' ' && p[9] == ':' && p[12] == ':' && months[string(p[:3])] != 0
}

// header parses a header line, whatever prefix a copy added before its timestamp.
func (r *Reader) header(line []byte) (*Entry, bool) {
	i := findStamp(line)
	if i < 0 {
		if e, ok := r.journald(line); ok {
			return e, true
		}
		return r.timeless(line)
	}
	t, ok := parseStamp(line[i : i+23])
	if !ok {
		return nil, false
	}
	r.year = t.Year()
	e := &Entry{Time: t, HasTime: true, File: r.name, Line: r.lineNo, Raw: string(line)}
	if i > 0 {
		e.Host = hostPrefix(line[:i])
	}
	rest := e.Raw[i+23:] // the fields are substrings of Raw: one allocation per line
	if !r.skeleton(e, rest) {
		// a timestamped line of another layout: keep the text as the message
		e.Msg = strings.TrimSpace(rest)
	}
	if i > 0 && line[i-1] == '`' {
		// a line quoted as code in a pasted thread: `2026-07-06 11:09:02,217 INFO … Down`
		e.Msg = strings.TrimSuffix(e.Msg, "`")
	}
	return e, true
}

// timeless parses a line whose timestamp is missing or mangled: ` LEVEL [logger] (thread:ctx) message`
// at the start of the line (grep output cut after the stamp, a copy that lost the stamp), or after
// what is left of a stamp ("025-03-14 18:57:40,347 INFO  […]", "2025-02-25` 06:59:13,941 DEBUG […]").
// The entry keeps its place in the file; it has no time (HasTime false), so what needs time says
// NOT DECIDABLE for it. A logger in brackets must follow the level, so a wrapped message line is not
// taken for an entry.
func (r *Reader) timeless(line []byte) (*Entry, bool) {
	i := 0
	for i < len(line) && i <= 40 && stampDebris(line[i]) {
		i++
	}
	if i > 40 || i < len(line) && line[i] < 'A' || i > 0 && line[i-1] != ' ' && line[i-1] != '\t' {
		return nil, false
	}
	rest := line[i:]
	lv, after, ok := bytes.Cut(rest, []byte{' '})
	if !ok || !isLevel(string(lv)) || !bytes.HasPrefix(bytes.TrimLeft(after, " "), []byte{'['}) || bytes.IndexByte(after, ']') < 0 {
		return nil, false
	}
	e := &Entry{HasTime: false, File: r.name, Line: r.lineNo, Raw: string(line)}
	if !r.skeleton(e, e.Raw[i:]) {
		return nil, false
	}
	return e, true
}

// stampDebris is what a mangled timestamp leaves before the level: digits, separators, a backtick.
func stampDebris(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == ':' || c == ',' || c == '.' || c == ' ' || c == '\t' || c == '`' || c == 'T'
}

// gluedHeader finds an entry glued to the end of a line that is not one ("…retrying2023-01-05
// 18:26:54,158 DEBUG [c.c.v.VmWorkJobDispatcher] …"): a stamp followed by a level, at i > 0; 0 if none.
func gluedHeader(line []byte) int {
	for k := 1; k+25 < len(line); k++ {
		if line[k+4] != '-' || line[k+13] != ':' || line[k] != '2' && line[k] != '1' || !isStamp(line[k:]) {
			continue
		}
		if lv, _, ok := bytes.Cut(bytes.TrimLeft(line[k+23:], " "), []byte{' '}); ok && isLevel(string(lv)) {
			return k
		}
	}
	return 0
}

// skeleton parses ` LEVEL [logger] (thread:ctx) (logid:x) message`; each part but the level is optional.
func (r *Reader) skeleton(e *Entry, s string) bool {
	s = strings.TrimLeft(s, " ")
	lv, rest, _ := strings.Cut(s, " ")
	if !isLevel(lv) {
		return false
	}
	e.Level = lv
	s = strings.TrimLeft(rest, " ")
	if strings.HasPrefix(s, "[") {
		if j := strings.IndexByte(s, ']'); j > 0 {
			e.Logger = s[1:j]
			s = strings.TrimLeft(s[j+1:], " ")
		}
	}
	e.Msg = threadAndLogID(e, s)
	return true
}

// threadAndLogID reads `(thread:ctx) (logid:x)` off s into e and returns the message after them.
func threadAndLogID(e *Entry, s string) string {
	if strings.HasPrefix(s, "(") && !strings.HasPrefix(s, "(logid:") {
		if j := closeParen(s); j > 0 {
			th := s[1:j]
			// the thread name ends at the first ':' (a context may hold more colons: "cmd: CopyCommand")
			if k := strings.IndexByte(th, ':'); k >= 0 {
				e.Thread, e.Context = th[:k], th[k+1:]
			} else {
				e.Thread = th
			}
			s = strings.TrimLeft(s[j+1:], " ")
		}
	}
	if strings.HasPrefix(s, "(logid:") {
		if j := strings.IndexByte(s, ')'); j > 0 {
			e.LogID = s[len("(logid:"):j]
			s = strings.TrimLeft(s[j+1:], " ")
		}
	}
	return s
}

// finish completes an entry when its continuation lines are in: a context a copy hard-wrapped
// ("(Work-Job-Executor-147:ctx-edf7f753 job-3221/job-3222 ctx-ea" / "279b8a) (logid:e2c57742) process
// hasn't exited") is read again from the joined text.
func finish(e *Entry) *Entry {
	if e != nil && e.Thread == "" && e.Level != "" && strings.HasPrefix(e.Msg, "(") && !strings.HasPrefix(e.Msg, "(logid:") && closeParen(e.Msg) > 0 {
		e.Msg = threadAndLogID(e, e.Msg)
	}
	return e
}

// closeParen finds the ')' closing s[0]='(' (contexts nest brackets and may hold parentheses).
func closeParen(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func isLevel(s string) bool {
	switch s {
	case "DEBUG", "INFO", "WARN", "ERROR", "TRACE", "FATAL", "WARNING":
		return true
	}
	return false
}

// findStamp finds "YYYY-MM-DD HH:MM:SS,mmm" at the start or after a short prefix (host name,
// grep's file:line:), -1 if none.
func findStamp(b []byte) int {
	if isStamp(b) {
		return 0
	}
	n := len(b) - 23
	if n > 512 {
		n = 512
	}
	for i := 1; i <= n; i++ {
		if b[i] == '2' || b[i] == '1' {
			if c := b[i-1]; c == ' ' || c == ':' || c == '\t' || c == '`' {
				if isStamp(b[i:]) {
					return i
				}
			}
		}
	}
	return -1
}

func isStamp(b []byte) bool {
	if len(b) < 23 {
		return false
	}
	for i, c := range b[:23] {
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != ' ' && c != 'T' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		case 19:
			if c != ',' && c != '.' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

func num(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}

// parseStamp reads a local timestamp (no zone: the server's local time) as UTC, by hand: the hot path.
func parseStamp(b []byte) (time.Time, bool) {
	y, mo, d := num(b[0:4]), num(b[5:7]), num(b[8:10])
	h, mi, s, ms := num(b[11:13]), num(b[14:16]), num(b[17:19]), num(b[20:23])
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, s, ms*int(time.Millisecond), time.UTC), true
}

// hostPrefix keeps a host name before the timestamp ("srv01 "), not grep's "./vmops.log:2825865:".
func hostPrefix(p []byte) string {
	s := strings.TrimRight(string(p), " \t:`")
	if s == "" || strings.ContainsAny(s, ":/`>") || strings.Contains(s, " ") || !isWordByte(s[0]) {
		return ""
	}
	return s
}

var months = map[string]time.Month{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7,
	"Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}

// journald parses `Dec 22 12:42:29 host java[21477]: WARN  [logger] message` (agent logs copied from
// the journal: no year, the last year seen is used).
func (r *Reader) journald(line []byte) (*Entry, bool) {
	// "Dec 22 12:42:29 " or "Dec  2 12:42:29 "
	if len(line) < 16 || line[3] != ' ' || line[6] != ' ' || line[9] != ':' || line[12] != ':' {
		return nil, false
	}
	mo, ok := months[string(line[:3])]
	if !ok {
		return nil, false
	}
	s := string(line)
	f := strings.Fields(s)
	if len(f) < 6 || !strings.HasSuffix(f[4], ":") {
		return nil, false
	}
	var d, h, mi, sec int
	if _, err := fmt.Sscanf(f[1]+" "+f[2], "%d %d:%d:%d", &d, &h, &mi, &sec); err != nil {
		return nil, false
	}
	y := r.year
	if y == 0 {
		y = 1
	}
	e := &Entry{Time: time.Date(y, mo, d, h, mi, sec, 0, time.UTC), HasTime: r.year != 0, Host: f[3],
		File: r.name, Line: r.lineNo, Raw: s}
	body := s[strings.Index(s, f[4])+len(f[4]):]
	if !r.skeleton(e, body) {
		// not a log4j entry: the process's other output on the journal (a stack frame, an exception,
		// libvirt's stderr), which continues the entry before it
		return nil, false
	}
	return e, true
}
