package process

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A refused agent's text reaches the log cut: a 4 MiB host id is not a 4 MiB line.
func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"h1", 64, "h1"},
		{strings.Repeat("h", 64), 64, strings.Repeat("h", 64)},
		{strings.Repeat("h", 4<<20), 64, strings.Repeat("h", 64) + "..."},
	} {
		assert.Equal(t, c.want, cut(c.in, c.n))
	}
}
