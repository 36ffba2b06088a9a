package provider

import (
	"context"
	"fmt"
	"io"

	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
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
	st := p.lookup(namespace, name)
	if st == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	rc, err := p.followLogs(ctx, st, container, slurm.LogOptions{Tail: 0, Follow: true})
	if errdefs.IsInvalidInput(err) {
		return nil, err // too many followers
	}
	if err != nil {
		return nil, fmt.Errorf("output of %s/%s container %s: %w", namespace, name, container, err)
	}
	return rc, nil
}
