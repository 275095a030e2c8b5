package printable

import "testing"

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode": "plain text, ünïcode",
		"a\nb\r":              `a\x0ab\x0d`,
		"\x1b[2J\x07":         `\x1b[2J\x07`,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
