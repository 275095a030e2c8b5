// Package printable makes text from a file a user is handed safe to print: control characters (a
// terminal's escape sequences, newlines that would forge or split a line) are written as \xNN.
package printable

import (
	"fmt"
	"strings"
	"unicode"
)

// String is s with its control characters written as \xNN.
func String(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
