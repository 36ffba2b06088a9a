//go:build e2e

package e2e

// The binaries the tests build carry one version, so that sluice-vk's
// default tunnel image (config.DefaultTunnelImage) is the one the node runs.
const (
	e2eVersion   = "v0.0.0-e2e"
	stampVersion = "-X github.com/sluice-hpc/sluice/internal/version.version=" + e2eVersion
	tunnelImage  = "ghcr.io/sluice-hpc/sluice-tunnel:" + e2eVersion
)
