package main

import (
	"runtime"

	"github.com/sluice-hpc/sluice/internal/version"
)

// versionString returns "sluice-tunnel VERSION (GOVERSION GOOS/GOARCH)", the
// version being internal/version's, shared with sluice-vk.
func versionString() string {
	return "sluice-tunnel " + version.String() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
