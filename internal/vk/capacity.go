package vk

import (
	"context"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/slurm"
)

// siteCapacity reads the node's capacity from the site's partitions
// (Node.Partitions), the amounts the configuration sets replacing the
// site's. It is nil when the configuration sets CPU, Memory and GPUs and
// names no extended resource: nothing is then read from the site.
func siteCapacity(n config.Node, c *slurm.Client) func(context.Context) (provider.Capacity, error) {
	if !n.ReadsCapacity() {
		return nil
	}
	return func(ctx context.Context) (provider.Capacity, error) {
		sc, err := c.Capacity(ctx, n.Partitions)
		if err != nil {
			return provider.Capacity{}, err
		}
		return provider.NodeCapacity(sc, n)
	}
}
