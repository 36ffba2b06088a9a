package provider

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// CreatePod accepts a pod bound to the node: a DaemonSet's pod is kept
// Pending, never submitted (parkDaemonSetPod); a pod that cannot run is
// refused (Failed, with a reason and an Event); any other is reported
// Pending and submitted in the background, retried with backoff while what
// it needs (a ConfigMap, the site) is missing. A pod whose job was submitted
// before (the virtual kubelet restarted) is adopted, never submitted twice.
func (p *Provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	key := keyOf(pod)
	p.mu.Lock()
	if old := p.pods[key]; old != nil && old.pod.UID == pod.UID {
		p.mu.Unlock()
		return nil
	}
	st := &podState{pod: pod.DeepCopy(), ref: p.cfg.Jobs.Ref(pod.Namespace, string(pod.UID), ""), finalizer: hasFinalizer(pod),
		adoptable: hasFinalizer(pod), wake: make(chan struct{}, 1)}
	restarted := pod.Status.StartTime != nil && pod.Status.HostIP == p.cfg.InternalIP && hasFinalizer(pod)
	if restarted {
		// ours before a restart: keep what was reported until the next poll
		st.pod.Status = *pod.Status.DeepCopy()
		p.resumeRenewal(st)
	} else {
		st.pod.Status = initialStatus(pod, p.cfg.InternalIP, p.cfg.Now())
	}
	p.pods[key] = st
	p.mu.Unlock()

	if ds := daemonSetOwner(pod); ds != nil {
		p.parkDaemonSetPod(st, ds, pod.Status.Reason == ReasonDaemonSetPod)
		return nil
	}
	// A pod that may have a job from before a restart is checked by its
	// first attempt, with the annotations the job was submitted with
	// (recoverFrozen), not with those patched since.
	if !st.adoptable {
		if r := p.precheck(pod); r != nil {
			p.refuse(st, r)
			return nil
		}
	}
	if !restarted {
		// told once: not again when the virtual kubelet restarts
		p.warnUnimplemented(pod)
	}
	p.push(st)
	p.background(func(ctx context.Context) { p.submit(ctx, st) })
	return nil
}

// UpdatePod takes the new labels and annotations of a pod; a job cannot
// change once submitted, so its spec is kept, and so are the annotations it
// was submitted with (applyMeta), a change to them told in a Warning Event.
// A change to the annotations of a pod whose submission waits is checked at
// once.
func (p *Provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	st := p.pods[keyOf(pod)]
	if st == nil || st.pod.UID != pod.UID {
		p.mu.Unlock()
		return nil
	}
	changed, recheck := st.applyMeta(*pod.ObjectMeta.DeepCopy())
	st.pod.Spec.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	st.pod.Spec.Tolerations = pod.Spec.Tolerations
	cur, job := st.pod.DeepCopy(), st.ref.JobID
	p.mu.Unlock()
	if recheck {
		st.wakeSubmission()
	}
	p.tellChangeIgnored(cur, job, changed)
	return nil
}

// submit turns the pod into a job and submits it, retrying with backoff
// until it is submitted, refused, deleted or ctx ends. Between attempts it
// holds nothing: a pod that waits (for a ConfigMap, its kept init
// containers, the site) neither keeps another pod from being submitted nor
// holds up its own deletion.
func (p *Provider) submit(ctx context.Context, st *podState) {
	for attempt := 0; ; attempt++ {
		done, err := p.attempt(ctx, st)
		if done {
			return
		}
		p.waitSubmit(st, err)
		// a change to the annotations is checked at once (UpdatePod)
		if !sleepOr(ctx, p.backoff(attempt), st.wake) {
			return
		}
	}
}

// attempt runs one trySubmit, holding the pod (st.op, so that no deletion
// runs meanwhile) and then a slot of the submissions in flight, for at most
// SubmitTimeout, and lets both go when it returns. It reports done when
// there is nothing more to do: the pod was submitted or refused, it is
// being deleted, or ctx ended.
func (p *Provider) attempt(ctx context.Context, st *podState) (bool, error) {
	st.op.Lock()
	defer st.op.Unlock()
	if p.isDeleting(st) {
		return true, nil
	}
	select {
	case p.submits <- struct{}{}:
	case <-ctx.Done():
		return true, nil
	}
	defer func() { <-p.submits }()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SubmitTimeout)
	defer cancel()
	return p.trySubmit(ctx, st)
}

// trySubmit makes one attempt. It reports done once the pod is submitted
// or refused; otherwise the error says what the pod waits for. The attempt
// works on one copy of the pod, checked first as at creation: its
// annotations may have changed since (UpdatePod), and whatever the job and
// the shadow are made from must pass the site's rules.
func (p *Provider) trySubmit(ctx context.Context, st *podState) (bool, error) {
	recovered, err := p.recoverFrozen(ctx, st)
	if err != nil {
		return false, &waitError{reason: reasonSubmitError, err: err}
	}
	p.mu.Lock()
	pod := st.pod.DeepCopy()
	jobUID := st.ref.UID // a renewal's own, taken up after a restart (resumeRenewal)
	p.mu.Unlock()
	if r := p.precheck(pod); r != nil {
		p.refuse(st, r)
		return true, nil
	}
	jobPod, r, err := p.prepareShadow(ctx, st, pod)
	if r != nil {
		p.refuse(st, r)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	job, err := jobscript.FromPod(ctx, jobPod, sources{client: p.cfg.Client, pod: pod}, jobscript.PodOptions{Runtime: p.cfg.Runtime, Site: p.cfg.Site})
	var perr *jobscript.PodError
	if errors.As(err, &perr) {
		p.refuse(st, podRefusal(perr))
		return true, nil
	}
	if err != nil {
		return false, &waitError{reason: reasonConfigError, err: err}
	}
	if err := p.relaySide(ctx, pod, job); err != nil {
		return false, err
	}
	job.UID = jobUID
	adopted := hasFinalizer(pod)
	if !adopted {
		if err := p.addFinalizer(ctx, pod); err != nil {
			return false, &waitError{reason: reasonSubmitError, err: err}
		}
		p.mu.Lock()
		st.finalizer = true
		p.mu.Unlock()
	}
	job.Annotations = prefixed(pod.Annotations) // kept with the job, for a restart (recoverFrozen)
	id, err := p.cfg.Jobs.Submit(ctx, job)
	var rerr *slurm.RefusedError
	switch {
	case errors.As(err, &rerr):
		// what sbatch refuses it refuses again: the pod fails, with its words
		p.refuse(st, &refusal{reason: ReasonRefused, field: "sbatch", rule: rerr.Message})
		return true, nil
	case errors.As(err, &perr):
		p.refuse(st, podRefusal(perr))
		return true, nil
	}
	if err != nil {
		return false, &waitError{reason: reasonSubmitError, err: err}
	}
	p.mu.Lock()
	st.ref.JobID = id
	st.submitted = true
	st.containers, st.runtimeOptions, st.socketDir, st.forwardEntry = jobSide(job)
	st.waitMsg = ""
	changed := st.freeze(pod)
	if changed == nil {
		changed = recovered // told now that the job's ID is known
	}
	cur := st.pod.DeepCopy()
	p.mu.Unlock()
	p.tellChangeIgnored(cur, id, changed)
	p.metrics.submit(adopted)
	if adopted {
		p.event(pod, corev1.EventTypeNormal, EventAdopted, "adopted Slurm job %s", id)
	} else {
		p.event(pod, corev1.EventTypeNormal, EventSubmitted, "submitted as Slurm job %s", id)
		p.warnJob(pod, job.Warnings) // once: an adopted job was warned of before
	}
	p.log.Info("provider: pod submitted", "pod", keyOf(pod), "uid", pod.UID, "job", id, "adopted", adopted)
	return true, nil
}

// waitError says why a submission waits: the container waiting reason and
// the error.
type waitError struct {
	reason string
	err    error
}

func (e *waitError) Error() string { return e.err.Error() }
func (e *waitError) Unwrap() error { return e.err }

// waitSubmit reports a submission that must wait: its containers wait with
// the reason, and a Warning Event is recorded when the reason is new.
func (p *Provider) waitSubmit(st *podState, err error) {
	reason := reasonSubmitError
	var we *waitError
	if errors.As(err, &we) {
		reason = we.reason
	}
	msg := err.Error()
	p.mu.Lock()
	prev := st.pod.Status
	st.pod.Status = waitingStatus(st.pod, prev, reason, msg)
	changed := !equality.Semantic.DeepEqual(prev, st.pod.Status)
	newMsg := st.waitMsg != msg
	st.waitMsg = msg
	pod := st.pod.DeepCopy()
	p.mu.Unlock()
	p.metrics.wait(reason)
	if newMsg {
		p.event(pod, corev1.EventTypeWarning, EventSubmitWaiting, "%s", msg)
		p.log.Warn("provider: submission waits", "pod", keyOf(pod), "reason", reason, "error", err)
	}
	if changed {
		p.push(st)
	}
}

func (p *Provider) isDeleting(st *podState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return st.deleting
}

// GetPod returns the pod as the provider reports it.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.pods[podKey(namespace, name)]
	if st == nil {
		return nil, notFound(namespace, name)
	}
	return st.pod.DeepCopy(), nil
}

// GetPodStatus returns the status the provider reports for the pod.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod the provider holds.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, st := range p.pods {
		out = append(out, st.pod.DeepCopy())
	}
	return out, nil
}

func notFound(namespace, name string) error {
	return errdefs.NotFound(fmt.Sprintf("pod %s/%s is not on this node", namespace, name))
}

// jobSide is what the provider keeps of a submitted job: its containers
// and runtime options (for exec), and its socket directory and relay's
// forward entry on the node ("" for none), for the shadow.
func jobSide(job *jobscript.Job) (containers []jobscript.Container, runtimeOptions []string, socketDir, forwardEntry string) {
	containers, runtimeOptions = append(slices.Clip(job.Init), job.Containers...), job.RuntimeOptions
	if job.Reverse != nil && job.Reverse.SocketDirRoot != "" {
		socketDir = job.Reverse.SocketDir(job.UID)
		if job.Reverse.RunsRelay() {
			forwardEntry = path.Join(socketDir, relay.ForwardSocket)
		}
	}
	return containers, runtimeOptions, socketDir, forwardEntry
}
