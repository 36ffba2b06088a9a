package provider

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
)

// RunningJob is the job of a pod while it runs: where the kubelet API's
// streams (port-forward, exec, attach) go.
type RunningJob struct {
	Ref slurm.JobRef
	// Host is the job's batch host, a validated host name or IP literal.
	Host string
	// Pod is the pod as the provider last reported it.
	Pod *corev1.Pod
	// Containers are the job's init containers and containers as they
	// were submitted.
	Containers []jobscript.Container
	// RuntimeOptions are the pod's runtime options and mounts, as the
	// job's command lines have them after the site's.
	RuntimeOptions []string
	// ForwardEntry is the path on Host of the relay's forward entry
	// (relay.ForwardSocket), when the job runs a relay; "" for none.
	ForwardEntry string
}

// Container returns the job's container name, or false.
func (j RunningJob) Container(name string) (jobscript.Container, bool) {
	for _, c := range j.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return jobscript.Container{}, false
}

// ErrNotRunning is wrapped by RunningJob's error for a pod whose job does
// not run (yet, or any more).
var ErrNotRunning = errors.New("the pod's Slurm job is not running")

// RunningJob returns the running job of the pod namespace/name. A pod the
// node does not hold is errdefs.NotFound; a pod whose job is not running,
// or runs on no known node, wraps ErrNotRunning and says what it is.
func (p *Provider) RunningJob(namespace, name string) (RunningJob, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.pods[podKey(namespace, name)]
	if st == nil {
		return RunningJob{}, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	phase, _ := slurm.PodPhase(st.last.State)
	switch {
	case !st.submitted:
		return RunningJob{}, fmt.Errorf("pod %s/%s: %w: it has not been submitted yet", namespace, name, ErrNotRunning)
	case st.final || st.deleting || phase != slurm.PhaseRunning:
		state := string(st.last.State)
		if state == "" {
			state = "unknown"
		}
		return RunningJob{}, fmt.Errorf("pod %s/%s: %w: Slurm job %s is %s", namespace, name, ErrNotRunning, st.ref.JobID, state)
	case st.last.BatchHost == "":
		return RunningJob{}, fmt.Errorf("pod %s/%s: %w: Slurm job %s has no batch host yet", namespace, name, ErrNotRunning, st.ref.JobID)
	}
	return RunningJob{Ref: st.ref, Host: st.last.BatchHost, Pod: st.pod.DeepCopy(), Containers: slices.Clone(st.containers),
		RuntimeOptions: slices.Clone(st.runtimeOptions), ForwardEntry: st.forwardEntry}, nil
}
