package provider

import (
	"context"
	"github.com/sluice-hpc/sluice/internal/shadow"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// DeletePod starts the deletion of a pod's job and returns: the job is
// cancelled until Slurm confirms it, the pod is reported terminated, the job
// directory removed and the finalizer taken off the pod, each step retried
// with backoff. A deletion cut short by a restart is taken up again at
// start-up (the finalizer keeps the pod in the API server until then).
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	st := p.pods[keyOf(pod)]
	if st == nil || st.pod.UID != pod.UID {
		// not held (a dangling pod): its job may still exist
		st = &podState{pod: pod.DeepCopy(), ref: p.cfg.Jobs.Ref(pod.Namespace, string(pod.UID), ""), finalizer: hasFinalizer(pod)}
		st.submitted = true
		p.resumeRenewal(st)
		p.pods[keyOf(pod)] = st
	}
	p.mu.Unlock()
	p.startDelete(st)
	return nil
}

// startDelete starts the deletion of st once.
func (p *Provider) startDelete(st *podState) {
	p.mu.Lock()
	if st.deleting {
		p.mu.Unlock()
		return
	}
	st.deleting = true
	if st.stopFollow != nil {
		st.stopFollow() // the shadow goes: its node no longer matters
	}
	p.mu.Unlock()
	p.background(func(ctx context.Context) { p.delete(ctx, st) })
}

// delete runs a deletion to its end, or until ctx ends.
func (p *Provider) delete(ctx context.Context, st *podState) {
	st.op.Lock() // waits for a submission in flight to finish
	defer st.op.Unlock()
	p.mu.Lock()
	pod := st.pod.DeepCopy()
	made := st.shadowOf.DeepCopy()
	ref := st.ref
	ref.Grace = preStopGrace(pod, st.containers)
	// a job may exist if it was submitted, or if the finalizer was set
	// (sbatch may have run before a restart)
	mayHaveJob := st.submitted || st.finalizer || hasFinalizer(pod)
	wasFinal := st.final
	others := p.otherJobs(st)
	p.mu.Unlock()

	if mayHaveJob && !wasFinal && ref.Grace > 0 {
		p.event(pod, corev1.EventTypeNormal, EventPreStop, "running the containers' preStop hooks (grace period %s) before Slurm job %s is cancelled", ref.Grace-preStopSlack, ref.JobID)
	}
	if mayHaveJob {
		if !p.retry(ctx, "cancel", pod, func() error { return p.cfg.Jobs.Cancel(ctx, ref) }) {
			return
		}
		if !p.dropOthers(ctx, pod, others) {
			return
		}
		if !wasFinal && ref.JobID != "" {
			p.metrics.cancelled()
			p.event(pod, corev1.EventTypeNormal, EventCancelled, "cancelled Slurm job %s", ref.JobID)
		}
	}
	p.terminate(st)
	p.cfg.Jobs.EndLogs(ref.UID)
	if made == nil && shadow.Wanted(pod) {
		made = pod // none made in this process (it restarted): the pod says where it is
	}
	if p.cfg.Shadows != nil && made != nil {
		if !p.retry(ctx, "delete the shadow", pod, func() error { return p.cfg.Shadows.Delete(ctx, made) }) {
			return
		}
	}
	if mayHaveJob {
		if !p.retry(ctx, "remove", pod, func() error { return p.cfg.Jobs.Remove(ctx, ref) }) {
			return
		}
	}
	if mayHaveJob {
		if !p.retry(ctx, "remove finalizer", pod, func() error { return p.removeFinalizer(ctx, pod) }) {
			return
		}
		p.mu.Lock()
		st.finalizer = false
		p.mu.Unlock()
	}
	if err := p.finishDeletion(ctx, pod); err != nil {
		p.log.Warn("provider: pod not deleted; the pod controller deletes it after its grace period", "pod", keyOf(pod), "error", err)
	}
	p.log.Info("provider: pod deleted", "pod", keyOf(pod), "uid", pod.UID, "job", ref.JobID)
	p.forget(st)
}

// retry runs fn, a step of a deletion or another step that must be done,
// until it succeeds, with backoff; false means ctx ended.
func (p *Provider) retry(ctx context.Context, what string, pod *corev1.Pod, fn func() error) bool {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		p.log.Warn("provider: step failed; retrying", "step", what, "pod", keyOf(pod), "uid", pod.UID, "attempt", attempt+1, "error", err)
		if !sleep(ctx, p.backoff(attempt)) {
			return false
		}
	}
}

// terminate reports the pod with every container terminated, as the pod
// controller expects once a pod is deleted.
func (p *Provider) terminate(st *podState) {
	p.mu.Lock()
	s := st.pod.Status.DeepCopy()
	if !st.final {
		js := st.last
		js.State = slurm.StateCancelled
		if js.JobID == "" {
			js.JobID = st.ref.JobID
		}
		*s = jobStatus(st.pod, *s, js, st.kept, p.cfg.Now())
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			if list[i].State.Terminated == nil {
				list[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: slurm.ReasonCancelled, Message: "the pod was deleted",
				}}
				list[i].Ready = false
			}
		}
	}
	st.pod.Status = *s
	st.final = true
	p.mu.Unlock()
	p.push(st)
}
