package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetContainerLogs streams a container's output from its job directory, as
// `kubectl logs` asks (follow, tail, since, timestamps, limit).
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, name, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	p.mu.Lock()
	st := p.pods[podKey(namespace, name)]
	var ref slurm.JobRef
	var prev *slurm.JobRef
	var pod *corev1.Pod
	if st != nil {
		ref, pod = st.ref, st.pod.DeepCopy()
		if st.renew != nil {
			prev = st.renew.prev
		}
	}
	p.mu.Unlock()
	if st == nil {
		return nil, notFound(namespace, name)
	}
	if !hasContainer(pod, container) {
		return nil, errdefs.NotFoundf("container %s is not in pod %s/%s", container, namespace, name)
	}
	if rc, ok, err := p.keptLogs(ctx, pod, container, podLogOptions(opts)); ok {
		return rc, err
	}
	if opts.Previous && prev != nil {
		// the job handed over from (sluice.io/renew-before): it has ended
		ref = *prev
		opts.Follow = false
	}
	if opts.Previous && prev == nil {
		// A container its probe killed runs again in the same job and
		// appends to the same log: there is no previous log apart.
		return nil, errdefs.InvalidInputf("previous logs of container %s in pod %s/%s are not kept apart: its runs are one after the other in its log, read without --previous", container, namespace, name)
	}
	var rc io.ReadCloser
	var err error
	if lo := logOptions(opts, p.cfg.Now()); lo.Follow {
		rc, err = p.followLogs(ctx, st, container, lo)
	} else {
		rc, err = p.cfg.Jobs.Logs(ctx, ref, container, lo)
	}
	if errdefs.IsInvalidInput(err) {
		return nil, err // too many followers
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errdefs.InvalidInputf("container %s in pod %s/%s is waiting to start", container, namespace, name)
	}
	if errors.Is(err, site.ErrNotRegular) {
		// The job put something else in place of its log: say so, as the
		// user's error, for the user to see.
		return nil, errdefs.InvalidInputf("logs of %s/%s container %s: %v", namespace, name, container, err)
	}
	if err != nil {
		return nil, fmt.Errorf("logs of %s/%s container %s: %w", namespace, name, container, err)
	}
	return rc, nil
}

// logOptions maps the kubelet API's options to the job's. The API cannot
// tell tailLines=0 from no tailLines (both are 0): 0 returns everything.
func logOptions(o api.ContainerLogOpts, now time.Time) slurm.LogOptions {
	lo := slurm.LogOptions{Tail: -1, Timestamps: o.Timestamps, Follow: o.Follow, LimitBytes: int64(o.LimitBytes)}
	if o.Tail > 0 {
		lo.Tail = o.Tail
	}
	switch {
	case o.SinceSeconds > 0:
		lo.Since = now.Add(-time.Duration(o.SinceSeconds) * time.Second)
	case !o.SinceTime.IsZero():
		lo.Since = o.SinceTime
	}
	return lo
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// podLogOptions maps the kubelet API's options back to the API's, for the
// logs of a kept container read from its shadow pod.
func podLogOptions(o api.ContainerLogOpts) *corev1.PodLogOptions {
	lo := &corev1.PodLogOptions{Follow: o.Follow, Timestamps: o.Timestamps, Previous: o.Previous}
	if o.Tail > 0 {
		t := int64(o.Tail)
		lo.TailLines = &t
	}
	if o.LimitBytes > 0 {
		l := int64(o.LimitBytes)
		lo.LimitBytes = &l
	}
	switch {
	case o.SinceSeconds > 0:
		s := int64(o.SinceSeconds)
		lo.SinceSeconds = &s
	case !o.SinceTime.IsZero():
		t := metav1.NewTime(o.SinceTime)
		lo.SinceTime = &t
	}
	return lo
}
