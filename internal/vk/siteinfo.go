package vk

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/sbatch"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// describeTimeout bounds the one command that reads the site's versions.
const describeTimeout = 15 * time.Second

// describeSite fills the node's NodeInfo from the site (Slurm, the
// container runtime and their versions, the login host's OS), read once at
// start. A site that does not answer leaves them unknown: the node still
// registers, and SiteReachable tells why. It returns the login host's
// machine (uname -m), "" when unknown.
func describeSite(ctx context.Context, log *slog.Logger, r site.Runner, rt jobscript.Runtime, opts jobscript.SiteOptions, n *corev1.Node) string {
	program := rt.Binary()
	if opts.RuntimePath != "" && program != "" {
		program = opts.RuntimePath
	}
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	info, err := site.Describe(ctx, r, program)
	if err != nil {
		log.Warn("sluice-vk: the site's versions are unknown", "error", err)
	}
	provider.SetSiteInfo(n, string(rt), info)
	if err == nil {
		log.Info("sluice-vk: site described", "slurm", info.Slurm, "runtime", n.Status.NodeInfo.ContainerRuntimeVersion,
			"os", info.OS, "kernel", info.Kernel, "arch", n.Status.NodeInfo.Architecture)
	}
	return info.Machine
}

// learnSbatch learns the site's sbatch options (slurm.Client.LearnSbatch),
// once at start, and says on the node which table the pods' flags are
// checked against. A site whose options cannot be learned keeps sluice's
// built-in table: logged here once, and told by the node's annotation and
// by doctor.
func learnSbatch(ctx context.Context, log *slog.Logger, c *slurm.Client, n *corev1.Node) *sbatch.Options {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	t, err := c.LearnSbatch(ctx)
	what := t.String()
	if err != nil {
		log.Warn("sluice-vk: the site's sbatch options are unknown: flags are checked against the built-in table", "error", err)
		what += ": " + err.Error()
	} else {
		log.Info("sluice-vk: sbatch options learned", "version", t.Version, "listed", t.Listed, "added", t.Added)
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[provider.AnnotationSbatchOptions] = what
	return t
}
