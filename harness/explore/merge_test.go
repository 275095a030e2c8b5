package explore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeShard writes a shard's result.json (its fields as given, JSON) and junit.xml into a new
// directory.
func writeShard(t *testing.T, fields string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"schemaVersion":1,"command":"explore","seed":"3","budget":10,"cases":10,`+fields+`}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junit.xml"), []byte(`<testsuite name="s" tests="1"></testsuite>`), 0o644))
	return dir
}

// Issue 49: a shard's files come from a CI artifact or someone's bug report. ReadShard reads no
// more of a file than MaxShardFile (/dev/zero behind a link was read until 6 GB were gone) and
// takes no shard count above MaxShards ("0/2000000000" had Merge list two billion missing shards),
// each refused with an error naming the file and the bound.
func TestReadShardBounds(t *testing.T) {
	huge := func(name string) func(string) {
		return func(dir string) {
			// sparse: a file one byte over the cap costs no disk
			f, err := os.Create(filepath.Join(dir, name))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(MaxShardFile+1))
			require.NoError(t, f.Close())
		}
	}
	zero := func(name string) func(string) {
		return func(dir string) {
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Skip("no /dev/zero")
			}
			p := filepath.Join(dir, name)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("/dev/zero", p))
		}
	}
	for _, c := range []struct {
		name   string
		fields string
		spoil  func(dir string)
		want   string
	}{
		{"result.json over the cap", `"profile":"fixed"`, huge("result.json"), "result.json: larger than the 64 MiB a shard's file may be"},
		{"junit.xml over the cap", `"profile":"fixed"`, huge("junit.xml"), "junit.xml: larger than the 64 MiB"},
		{"result.json is /dev/zero", `"profile":"fixed"`, zero("result.json"), "result.json: larger than the 64 MiB"},
		{"junit.xml is /dev/zero", `"profile":"fixed"`, zero("junit.xml"), "junit.xml: larger than the 64 MiB"},
		{"two billion shards", `"profile":"fixed","shard":"0/2000000000"`, nil, "result.json: shard 0/2000000000: a run is split into 10000 shards at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeShard(t, c.fields)
			if c.spoil != nil {
				c.spoil(dir)
			}
			_, err := ReadShard(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), dir)
		})
	}
	// the largest count allowed: Merge names a few of the missing shards, not all
	s, err := ReadShard(writeShard(t, `"profile":"fixed","shard":"0/10000"`))
	require.NoError(t, err)
	_, err = Merge([]*Shard{s})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shard(s) 1/10000, 2/10000,")
	assert.Contains(t, err.Error(), "and 9989 more missing")
	assert.Less(t, len(err.Error()), 400)
}

// Issue 49: every string merge prints from a shard has its control characters escaped: a
// result.json's profile, scheduler, replay command or attribution line that carries a terminal's
// escape sequences (here: clear the screen, set the window title, a fake line) is shown, not obeyed.
func TestMergeTextEscapesShardStrings(t *testing.T) {
	const esc = "\x1b[2J\x1b]0;pwned\x07\nFOUND nothing\r"
	fields := `"profile":"fixed` + jsonEsc(esc) + `","scheduler":"pct` + jsonEsc(esc) + `","defects":["D1` + jsonEsc(esc) + `"],` +
		`"shard":"0/2","found":true,"replay":"csconform explore` + jsonEsc(esc) + `","attribution":{"line":"D1` + jsonEsc(esc) + `"},` +
		`"violations":[{"invariant":"ip-conflict` + jsonEsc(esc) + `"}],"notLinearizable":[{"object":"vm:2` + jsonEsc(esc) + `","model":"vm","explain":[]}]`
	a, err := ReadShard(writeShard(t, fields))
	require.NoError(t, err)
	b, err := ReadShard(writeShard(t, strings.Replace(fields, `"0/2"`, `"1/2"`, 1)))
	require.NoError(t, err)
	m, err := Merge([]*Shard{a, b})
	require.NoError(t, err)
	text := m.Text()
	for _, r := range text {
		if r != '\n' {
			assert.False(t, r < 0x20 || r == 0x7f, "a control character %q reaches the terminal:\n%s", r, text)
		}
	}
	assert.Contains(t, text, `fixed\x1b[2J\x1b]0;pwned\x07\x0aFOUND nothing\x0d`)
	assert.Contains(t, text, `replay: csconform explore\x1b[2J`)
	assert.Equal(t, 1+2*2+1, strings.Count(text, "\n"), "a shard's string broke a line:\n%s", text)

	// and the errors that quote a shard's strings
	c, err := ReadShard(writeShard(t, `"profile":"other`+jsonEsc(esc)+`","shard":"1/2"`))
	require.NoError(t, err)
	_, err = Merge([]*Shard{a, c})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "\x1b")
	assert.NotContains(t, err.Error(), "\n")
}

// jsonEsc is s as the inside of a JSON string.
func jsonEsc(s string) string {
	r := strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`, "\n", `\n`, "\r", `\r`)
	return r.Replace(s)
}
