package cloudapi

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// docs/api.md's command table is the server's: the same commands, each async and a list where the
// server's is, with the same parameters and required marks, and the same description.
func TestAPIDocListsEveryCommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var documented []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 5 {
			t.Errorf("not a command row: %s", line)
			continue
		}
		name := strings.Trim(cells[0], "`")
		documented = append(documented, name)
		c, ok := f.h.cmds[strings.ToLower(name)]
		if !ok || c.name != name {
			t.Errorf("docs/api.md lists %s, which the server does not serve", name)
			continue
		}
		var params []string
		for _, p := range c.params {
			params = append(params, p.name+map[bool]string{true: "*"}[p.required])
		}
		desc := strings.NewReplacer("&lt;", "<", "&gt;", ">", "`", "").Replace(cells[4])
		if cells[1] != yesNo(c.async) || cells[2] != yesNo(c.list) || cells[3] != strings.Join(params, ", ") || desc != strings.ReplaceAll(c.desc, "`", "") {
			t.Errorf("docs/api.md's row for %s:\n  %s\nthe server's: async %s, list %s, params %q, %q", name, line, yesNo(c.async), yesNo(c.list), strings.Join(params, ", "), c.desc)
		}
	}
	if !slices.Equal(documented, f.h.Commands()) {
		t.Errorf("docs/api.md lists %v, the server serves %v (in this order)", documented, f.h.Commands())
	}
}
