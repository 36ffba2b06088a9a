package main

import (
	"runtime"
	"runtime/debug"
)

// version is the release, set when building:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/sluice-tunnel
//
// If empty, the module version or VCS revision recorded by the Go toolchain
// is used.
var version string

// versionString returns "sluice-tunnel VERSION (GOVERSION GOOS/GOARCH)".
func versionString() string {
	return "sluice-tunnel " + buildVersion() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}
