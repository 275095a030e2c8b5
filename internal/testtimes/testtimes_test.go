package testtimes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream as go test -json writes it: a passing package, a failing test (its output shown, a
// passing test's not), a parallel subtest (its parent reports 0 s but takes as long as it) and a test
// the -timeout killed, and a package that does not build.
const stream = `{"Action":"run","Package":"p/a","Test":"TestFast"}
{"Action":"output","Package":"p/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"pass","Package":"p/a","Test":"TestFast","Elapsed":0.5}
{"Action":"run","Package":"p/a","Test":"TestSlow"}
{"Action":"output","Package":"p/a","Test":"TestSlow/sub","Output":"quiet\n"}
{"Action":"pass","Package":"p/a","Test":"TestSlow/sub","Elapsed":40}
{"Action":"pass","Package":"p/a","Test":"TestSlow","Elapsed":0}
{"Action":"output","Package":"p/a","Output":"ok  \tp/a\t42.0s\n"}
{"Action":"pass","Package":"p/a","Elapsed":42}
{"Action":"output","Package":"p/b","Test":"TestBroken","Output":"    b_test.go:9: want 1, got 2\n"}
{"Action":"fail","Package":"p/b","Test":"TestBroken","Elapsed":3}
{"Action":"output","Package":"p/b","Output":"FAIL\tp/b\t3.1s\n"}
{"Action":"fail","Package":"p/b","Elapsed":3.1}
{"Action":"output","Package":"p/c","Test":"TestHangs","Output":"panic: test timed out after 1m0s\n"}
{"ImportPath":"p/d.test","Action":"build-output","Output":"p/d/d_test.go:3:1: syntax error\n"}
{"ImportPath":"p/d.test","Action":"build-fail"}
# a line that is not JSON
`

func TestReadRanksAndShowsFailures(t *testing.T) {
	var out strings.Builder
	s, err := Read(strings.NewReader(stream), &out)
	require.NoError(t, err)
	assert.Equal(t, 3, s.Failed)
	assert.Equal(t, []Timing{{"p/a", "TestSlow", 40}, {"p/b", "TestBroken", 3}, {"p/a", "TestFast", 0.5}}, s.Tests)
	assert.Equal(t, []Timing{{Package: "p/a", Seconds: 42}, {Package: "p/b", Seconds: 3.1}}, s.Packages)
	got := out.String()
	for _, want := range []string{"ok  \tp/a\t42.0s\n", "b_test.go:9: want 1, got 2\n", "FAIL\tp/b\t3.1s\n",
		"--- unfinished: p/c TestHangs\npanic: test timed out", "d_test.go:3:1: syntax error\n", "# a line that is not JSON\n"} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "=== RUN   TestFast", "a passing test's output is not shown")

	var top strings.Builder
	WriteSlowest(&top, s, 2)
	assert.Equal(t, "slowest 2 tests (top-level, wall seconds):\n     40.0  p/a TestSlow\n      3.0  p/b TestBroken\n"+
		"slowest 2 packages:\n     42.0  p/a\n      3.1  p/b\n", top.String())
}
