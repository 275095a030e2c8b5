package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// versionCmd prints the version line: csconform version and csconform --version alike.
func versionCmd(stdout io.Writer) int {
	fmt.Fprintln(stdout, versionLine())
	return exitOK
}

// versionLine is the module version and the VCS revision the binary was built from, as the build
// info records them ("(devel)" and no revision for a binary built outside a checkout).
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "csconform (no build information)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	line := fmt.Sprintf("csconform %s %s", bi.Main.Version, bi.GoVersion)
	if rev := settings["vcs.revision"]; rev != "" {
		line += " revision " + rev
		if settings["vcs.modified"] == "true" {
			line += " (modified)"
		}
		if t := settings["vcs.time"]; t != "" {
			line += " of " + t
		}
	}
	return line
}
