package specdoc

import (
	"errors"
	"reflect"
	"testing"
)

const sample = "# T\n\n## 1 A\n\ntext\n\n| a | `b` |\n|---|---|\n| 1 | **2** |\n| 3 | |\n\n### 1.1 Sub\n\n| x |\n|:-:|\n| y |\n\n## 2 B\n\n| a | b |\n|---|---|\n| 9 | 9 |\n"

func TestSectionAndTables(t *testing.T) {
	d := Parse(sample)
	s, err := d.Section("1 A")
	if err != nil {
		t.Fatal(err)
	}
	tabs := s.Tables()
	if len(tabs) != 2 {
		t.Fatalf("section 1 has %d tables, want 2 (its own and 1.1's)", len(tabs))
	}
	want := Table{Header: []string{"a", "b"}, Rows: [][]string{{"1", "2"}, {"3", ""}}}
	if !reflect.DeepEqual(tabs[0], want) {
		t.Errorf("table = %#v, want %#v", tabs[0], want)
	}
	sub, err := d.Section("1.1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sub.TableWithHeader("x"); err != nil || !reflect.DeepEqual(got.Rows, [][]string{{"y"}}) {
		t.Errorf("TableWithHeader(x) = %v, %v", got, err)
	}
	if _, err := d.Section("3"); err == nil {
		t.Error("Section(3) found a section that does not exist")
	}
}

func TestLoadMissing(t *testing.T) {
	t.Setenv(EnvVar, "does/not/exist.md")
	if _, err := Load(); !errors.Is(err, ErrMissing) {
		t.Errorf("Load() err = %v, want ErrMissing", err)
	}
}
