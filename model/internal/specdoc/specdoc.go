package specdoc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// RelPath is the state machines' section of the spec, relative to a package
// directory one level below model/ (model/vm, model/host, ...): the repository
// carries it (testdata/state-machines.md), so the tests never skip.
const RelPath = "../internal/specdoc/testdata/state-machines.md"

// EnvVar overrides RelPath, for running tests from an unusual layout.
const EnvVar = "CSCONFORM_SPEC"

// ErrMissing is returned by Load when the spec file does not exist; tests
// skip rather than fail on it (CSCONFORM_SPEC naming a file that is not there).
var ErrMissing = errors.New("specdoc: spec file not found")

// Doc is a Markdown document, or a section of one, as lines.
type Doc struct {
	Lines []string
}

// Table is a Markdown pipe table: the header cells and the body rows.
type Table struct {
	Header []string
	Rows   [][]string
}

// Path returns the spec path Load would read.
func Path() string {
	if p := os.Getenv(EnvVar); p != "" {
		return p
	}
	return RelPath
}

// Load reads the spec from Path. A missing file yields an error wrapping
// ErrMissing.
func Load() (*Doc, error) {
	p := Path()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrMissing, p)
	}
	if err != nil {
		return nil, err
	}
	return Parse(string(b)), nil
}

// Parse splits Markdown text into a Doc.
func Parse(text string) *Doc {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return &Doc{Lines: strings.Split(text, "\n")}
}

// headingLevel returns the number of leading '#' of a heading line, 0 if the
// line is not a heading.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

// Section returns the section whose heading text starts with prefix (e.g.
// "2.1.3"), up to the next heading of the same or a higher level. Subsections
// are included.
func (d *Doc) Section(prefix string) (*Doc, error) {
	for i, line := range d.Lines {
		lvl := headingLevel(line)
		if lvl == 0 || !strings.HasPrefix(strings.TrimSpace(line[lvl:]), prefix) {
			continue
		}
		end := len(d.Lines)
		for j := i + 1; j < len(d.Lines); j++ {
			if l := headingLevel(d.Lines[j]); l != 0 && l <= lvl {
				end = j
				break
			}
		}
		return &Doc{Lines: d.Lines[i:end]}, nil
	}
	return nil, fmt.Errorf("specdoc: no section %q", prefix)
}

// Text returns the document as one string.
func (d *Doc) Text() string { return strings.Join(d.Lines, "\n") }

// Tables returns every pipe table of the document, in order.
func (d *Doc) Tables() []Table {
	var out []Table
	for i := 0; i < len(d.Lines); i++ {
		if !isRow(d.Lines[i]) {
			continue
		}
		start := i
		for i < len(d.Lines) && isRow(d.Lines[i]) {
			i++
		}
		block := d.Lines[start:i]
		if len(block) < 2 || !isSeparator(block[1]) {
			continue
		}
		t := Table{Header: cells(block[0])}
		for _, l := range block[2:] {
			t.Rows = append(t.Rows, cells(l))
		}
		out = append(out, t)
	}
	return out
}

// TableWithHeader returns the first table whose header cells equal header.
func (d *Doc) TableWithHeader(header ...string) (Table, error) {
	for _, t := range d.Tables() {
		if equal(t.Header, header) {
			return t, nil
		}
	}
	return Table{}, fmt.Errorf("specdoc: no table with header %q", header)
}

// Clean strips Markdown emphasis and code marks from a cell.
func Clean(s string) string {
	s = strings.ReplaceAll(s, "`", "")
	s = strings.ReplaceAll(s, "**", "")
	return strings.TrimSpace(s)
}

func isRow(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "|")
}

func isSeparator(line string) bool {
	for _, c := range cells(line) {
		if strings.Trim(c, "-: ") != "" || c == "" {
			return false
		}
	}
	return true
}

// cells splits a table row on '|' (the spec's tables contain no escaped
// pipes) and cleans each cell.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	parts := strings.Split(line, "|")
	for i, p := range parts {
		parts[i] = Clean(p)
	}
	return parts
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SectionOrSkip is the tests' way in: the spec's section, a skip with where the spec was expected
// when the file is absent, or a failure when it cannot be read or has no such section.
func SectionOrSkip(t testing.TB, prefix string) *Doc {
	t.Helper()
	d, err := Load()
	if errors.Is(err, ErrMissing) {
		t.Skipf("spec not available (%v): expected at model/internal/specdoc/testdata/state-machines.md, or set %s", err, EnvVar)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Section(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
