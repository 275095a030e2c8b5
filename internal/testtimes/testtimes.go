// Package testtimes reads `go test -json` and says what CI needs to see of it: each package's result
// line, the whole output of every failed test, and the slowest tests and packages with their times,
// so a test that creeps towards its deadline is seen before it turns CI red.
package testtimes

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Timing is one test's or package's wall time, in seconds.
type Timing struct {
	Package string
	Test    string // empty for a package
	Seconds float64
}

// Summary is what a run showed.
type Summary struct {
	Tests, Packages []Timing // every finished test (subtests left out) and package, slowest first
	Failed          int      // failed tests and packages
	Lines           int      // JSON lines read
}

// Read copies the run's readable lines to out as it reads them (package results, failed tests'
// output, a panic or build failure) and sums it up. A line that is not JSON (a build error printed
// beside the stream) is copied as it is.
func Read(in io.Reader, out io.Writer) (Summary, error) {
	var s Summary
	type key struct{ pkg, test string }
	held := map[key][]string{} // a running test's output, printed only if it fails
	// A test's time is the longer of its own Elapsed and its longest subtest's: a test whose
	// subtests are parallel reports an Elapsed of 0, though it ends with the last of them. (The
	// events' times do not say more: go test -json marks a parallel test "cont" whenever its output
	// interleaves with another's.)
	longestSub := map[key]float64{}
	took := func(k key, e event) float64 { return max(e.Elapsed, longestSub[k]) }
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		s.Lines++
		k := key{e.Package, e.Test}
		if top, _, sub := strings.Cut(e.Test, "/"); sub && (e.Action == "pass" || e.Action == "fail") {
			t := key{e.Package, top}
			longestSub[t] = max(longestSub[t], e.Elapsed)
		}
		switch e.Action {
		case "build-output": // go test -json's build events (Go 1.24 on): a compile error
			io.WriteString(out, e.Output)
		case "build-fail":
			s.Failed++
		case "output":
			held[k] = append(held[k], e.Output)
		case "pass", "skip":
			if e.Test == "" {
				printPackageResult(out, held[k])
			} else if e.Action == "pass" && !strings.Contains(e.Test, "/") {
				s.Tests = append(s.Tests, Timing{e.Package, e.Test, took(k, e)})
			}
			if e.Test == "" && e.Action == "pass" {
				s.Packages = append(s.Packages, Timing{Package: e.Package, Seconds: e.Elapsed})
			}
			delete(held, k)
		case "fail":
			s.Failed++
			if e.Test == "" {
				s.Packages = append(s.Packages, Timing{Package: e.Package, Seconds: e.Elapsed})
			} else if !strings.Contains(e.Test, "/") {
				s.Tests = append(s.Tests, Timing{e.Package, e.Test, took(k, e)})
			}
			for _, o := range held[k] {
				io.WriteString(out, o)
			}
			delete(held, k)
		}
	}
	// A test still running when the stream ended (the binary was killed by its -timeout): its output
	// says where it was.
	for _, k := range slices.SortedFunc(maps.Keys(held), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test))
	}) {
		if k.test != "" && len(held[k]) > 0 {
			fmt.Fprintf(out, "--- unfinished: %s %s\n", k.pkg, k.test)
			for _, o := range held[k] {
				io.WriteString(out, o)
			}
		}
	}
	bySeconds := func(a, b Timing) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Package, b.Package), cmp.Compare(a.Test, b.Test))
	}
	slices.SortFunc(s.Tests, bySeconds)
	slices.SortFunc(s.Packages, bySeconds)
	return s, sc.Err()
}

// printPackageResult prints a finished package's closing line(s) as go test does ("ok  pkg 1.2s").
func printPackageResult(out io.Writer, lines []string) {
	for _, o := range lines {
		if strings.HasPrefix(o, "ok ") || strings.HasPrefix(o, "?") || strings.HasPrefix(o, "FAIL") {
			io.WriteString(out, o)
		}
	}
}

// WriteSlowest prints the n slowest tests and packages.
func WriteSlowest(out io.Writer, s Summary, n int) {
	fmt.Fprintf(out, "slowest %d tests (top-level, wall seconds):\n", min(n, len(s.Tests)))
	for _, t := range s.Tests[:min(n, len(s.Tests))] {
		fmt.Fprintf(out, "  %7.1f  %s %s\n", t.Seconds, strings.TrimPrefix(t.Package, "github.com/csconform/csconform/"), t.Test)
	}
	fmt.Fprintf(out, "slowest %d packages:\n", min(n, len(s.Packages)))
	for _, t := range s.Packages[:min(n, len(s.Packages))] {
		fmt.Fprintf(out, "  %7.1f  %s\n", t.Seconds, strings.TrimPrefix(t.Package, "github.com/csconform/csconform/"))
	}
}
