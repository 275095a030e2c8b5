package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// singleDash rewrites -name and -name=value to --name... where name is a long flag of the command
// args run: Go's flag package, which the CLI used before cobra, took both forms, and scripts may
// still write -json. A value that only looks like a flag (--ssh-opt -F) is left alone.
func singleDash(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	out := make([]string, 0, len(args))
	takesValue := false // the previous argument is a flag that takes this one as its value
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if takesValue {
			out = append(out, a)
			takesValue = false
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := cmd.Flags().Lookup(name)
		if f != nil && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 {
			a = "-" + a
		}
		if f != nil && strings.HasPrefix(a, "--") && !hasValue && f.NoOptDefVal == "" {
			takesValue = true
		}
		out = append(out, a)
	}
	return out
}
