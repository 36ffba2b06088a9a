package provider

import (
	"context"
	"fmt"
	"io"

	"github.com/sluice-hpc/sluice/internal/slurm"
)

// FollowOutput returns what the container of the pod's running job writes
// from now on (its log file followed from its current end), until the
// container ends or ctx does: kubectl attach's view of it.
func (p *Provider) FollowOutput(ctx context.Context, namespace, name, container string) (io.ReadCloser, error) {
	job, err := p.RunningJob(namespace, name)
	if err != nil {
		return nil, err
	}
	if _, ok := job.Container(container); !ok {
		return nil, fmt.Errorf("pod %s/%s has no container %q in its job", namespace, name, container)
	}
	rc, err := p.cfg.Jobs.Logs(ctx, job.Ref, container, slurm.LogOptions{Tail: 0, Follow: true})
	if err != nil {
		return nil, fmt.Errorf("output of %s/%s container %s: %w", namespace, name, container, err)
	}
	return rc, nil
}
