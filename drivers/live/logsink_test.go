package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csconform/csconform/model/history"
)

// A live process's sink prints INFO lines and state changes (DEBUG only when verbose), and appends
// every event to its history, a restarted process's numbers going on from the file's last.
func TestLogSink(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sub", "ms.jsonl")
	var out strings.Builder
	s, closeSink, err := NewLogSink(&out, false, file)
	if err != nil {
		t.Fatal(err)
	}
	s.Emit(history.Event{Kind: history.Log, Level: "INFO", Actor: "ms", Object: "vm:1", Detail: "deployed"})
	s.Emit(history.Event{Kind: history.Log, Level: "DEBUG", Actor: "ms", Object: "vm:1", Detail: "hidden"})
	s.Emit(history.Event{Kind: history.State, Actor: "ms", Object: "vm:1", To: "Running", Detail: "started"})
	closeSink()
	if got := out.String(); !strings.Contains(got, "INFO  [ms] vm:1 deployed") || strings.Contains(got, "hidden") || !strings.Contains(got, "STATE [ms] vm:1 - -> Running (started)") {
		t.Fatalf("printed:\n%s", got)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v %v", st, err)
	}
	again, closeAgain, err := NewLogSink(&out, true, file)
	if err != nil {
		t.Fatal(err)
	}
	again.Emit(history.Event{Kind: history.Log, Level: "DEBUG", Actor: "ms", Detail: "shown"})
	closeAgain()
	if last, err := history.LastSeq(file); err != nil || last != 4 {
		t.Fatalf("last seq %d %v, want 4", last, err)
	}
	if !strings.Contains(out.String(), "shown") {
		t.Fatal("a verbose sink hid a DEBUG line")
	}
}
