package main

import (
	"runtime/debug"
	"strings"

	"github.com/mcp-switchboard/switchboard/proxy"
)

// devVersion is what a build reports that carries no version: no -ldflags
// and no module version in its build info.
const devVersion = "dev"

// stampVersion sets proxy.Version from the build info when -ldflags did
// not set it. main calls it once, before anything reads the version.
func stampVersion() {
	info, _ := debug.ReadBuildInfo()
	proxy.Version = moduleVersion(proxy.Version, info)
}

// moduleVersion is the version to report: the one -ldflags set, else the
// main module's version from the build info (a tag, or a pseudo-version
// with the commit, when built with VCS stamping or by go install
// module@version), else devVersion.
func moduleVersion(ldflags string, info *debug.BuildInfo) string {
	if ldflags != "" && ldflags != devVersion {
		return ldflags
	}
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return devVersion
}

// versionLine is what `switchboard version` prints: the version, then the
// VCS revision and whether the tree had local changes, when the build
// recorded them ("switchboard v1.2.3 (rev abc1234, modified)").
func versionLine(version string, info *debug.BuildInfo) string {
	var rev string
	var modified bool
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var extra []string
	if rev != "" {
		extra = append(extra, "rev "+rev[:min(len(rev), 7)])
	}
	if modified {
		extra = append(extra, "modified")
	}
	line := "switchboard " + version
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	return line
}
