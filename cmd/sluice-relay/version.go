package main

import (
	"runtime"

	"github.com/sluice-hpc/sluice/internal/version"
)

// versionString returns "sluice-relay VERSION (GOVERSION GOOS/GOARCH)", the
// version being internal/version's, the one sluice-vk and sluice-tunnel
// print: the relay sluice-vk places on the site is of its own version.
func versionString() string {
	return "sluice-relay " + version.String() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
