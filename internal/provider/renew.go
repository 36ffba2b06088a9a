package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Events of a renewal (SPEC S16): a pod asking for sluice.io/renew-before
// has a successor job submitted before its job's time limit, and its
// service handed over to it.
const (
	EventSuccessorSubmitted = "SuccessorSubmitted"
	EventSuccessorReady     = "SuccessorReady"
	EventHandedOver         = "HandedOver"
	// EventSuccessorFailed warns that a successor ended or could not be
	// submitted; another is tried after a back-off.
	EventSuccessorFailed = "SuccessorFailed"
	// EventSuccessorLate warns that the job reached its time limit before
	// its successor ran: the pod is not Ready until the successor is.
	EventSuccessorLate = "SuccessorLate"
	// EventRenewalImpossible warns that the job's time limit, as Slurm
	// gives it, is not longer than the lead time: no successor is made.
	EventRenewalImpossible = "RenewalImpossible"
	// EventTunnelLate warns that the forward tunnel did not say it serves
	// the successor within HandoverTimeout: the old job is ended anyway.
	EventTunnelLate = "TunnelLate"
)

// ConditionCurrentJob names the job that serves the pod now: its reason
// is "Renewal<N>" (0 for the pod's first job) and its message the Slurm job.
// It is how a restarted sluice-vk takes up the current job, not the first.
const ConditionCurrentJob corev1.PodConditionType = "sluice.io/CurrentJob"

// reasonWaitingForSuccessor is the Ready condition's reason while the job
// that reached its time limit waits for its successor to run.
const reasonWaitingForSuccessor = "WaitingForSuccessor"

// renewal is the state of a pod's walltime renewal; guarded by Provider.mu.
type renewal struct {
	before time.Duration // the lead time (annotations.RenewBefore)
	gen    int           // the renewal the current job is (0: the first job)
	next   int           // the renewal the next successor is: a failed one's name is not taken again
	succ   *successor    // the successor in flight, nil for none
	// prev is the job handed over from, kept for `kubectl logs --previous`
	// until the next handover removes its directory.
	prev *slurm.JobRef
	// retryAt holds back the next successor after a failed one.
	retryAt  time.Time
	failures int
	// late: the current job reached its time limit before its successor
	// ran; the pod is not Ready meanwhile.
	late bool
	// impossible: the job's limit is not longer than the lead time (told once).
	impossible bool
}

// successor is a job submitted to take over from the current one.
type successor struct {
	gen            int
	ref            slurm.JobRef // JobID "" while it is being submitted
	socketDir      string
	forwardEntry   string
	containers     []jobscript.Container
	runtimeOptions []string
	last           slurm.Status
	handing        bool // the handover runs
}

// renewalUID is the name of the job of renewal gen of the pod uid: the job
// and its directory are apart from the others', so that two jobs of the
// pod never write the same files, and one found by name after a restart is
// adopted rather than submitted twice.
func renewalUID(uid string, gen int) string {
	if gen == 0 {
		return uid
	}
	return uid + "-r" + strconv.Itoa(gen)
}

// resumeRenewal takes up, for a pod the virtual kubelet held before it
// restarted, the job its status names as current (ConditionCurrentJob).
// The caller holds p.mu or owns st alone.
func (p *Provider) resumeRenewal(st *podState) {
	for _, c := range st.pod.Status.Conditions {
		if c.Type != ConditionCurrentJob {
			continue
		}
		gen, err := strconv.Atoi(strings.TrimPrefix(c.Reason, "Renewal"))
		if err != nil || gen <= 0 || gen > maxRenewals {
			return
		}
		st.ref = p.cfg.Jobs.Ref(st.pod.Namespace, renewalUID(string(st.pod.UID), gen), "")
		st.renew = &renewal{gen: gen, next: gen + 1}
		if prev := c.Message; prev != "" {
			if g, ok := previousRenewal(prev); ok {
				ref := p.cfg.Jobs.Ref(st.pod.Namespace, renewalUID(string(st.pod.UID), g), "")
				st.renew.prev = &ref
			}
		}
	}
}

// maxRenewals bounds the renewal number a pod's status may name.
const maxRenewals = 1 << 20

// currentJobCondition is ConditionCurrentJob for the current job of st.
// The caller holds p.mu.
func currentJobCondition(st *podState, now time.Time) corev1.PodCondition {
	msg := fmt.Sprintf("Slurm job %s", st.ref.JobID)
	if r := st.renew; r.prev != nil {
		msg += fmt.Sprintf(", after renewal %d", renewalOf(r.prev.UID))
	}
	return corev1.PodCondition{Type: ConditionCurrentJob, Status: corev1.ConditionTrue,
		Reason: "Renewal" + strconv.Itoa(st.renew.gen), Message: msg, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
}

// renewalOf is the renewal number of a job's UID.
func renewalOf(uid string) int {
	if i := strings.LastIndex(uid, "-r"); i >= 0 {
		if n, err := strconv.Atoi(uid[i+2:]); err == nil {
			return n
		}
	}
	return 0
}

// previousRenewal reads the renewal a ConditionCurrentJob message names as
// the one before.
func previousRenewal(msg string) (int, bool) {
	_, after, ok := strings.Cut(msg, ", after renewal ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(after)
	return n, err == nil && n >= 0 && n < maxRenewals
}

// renewDue decides, on each status of the current job, whether a successor
// is due: the job runs, Slurm gives its time limit, and less than the lead
// time is left. It starts the successor's submission once. The caller
// holds p.mu.
func (p *Provider) renewDue(st *podState, js slurm.Status) (submit bool, impossible string) {
	if st.renew == nil {
		d, r := renewBefore(st.pod)
		if d == 0 || r != nil {
			return false, ""
		}
		st.renew = &renewal{before: d, next: 1}
	}
	r := st.renew
	if r.before == 0 { // resumed after a restart: the lead time is the pod's
		if r.before, _ = renewBefore(st.pod); r.before == 0 {
			return false, ""
		}
	}
	now := p.cfg.Now()
	switch {
	case r.succ != nil || st.deleting || st.final || now.Before(r.retryAt):
		return false, ""
	case r.late:
		return true, "" // the job ended: a successor at once
	case js.State != slurm.StateRunning || js.LimitEnd.IsZero():
		return false, ""
	case js.LimitEnd.Sub(js.StartTime) <= r.before:
		if r.impossible {
			return false, ""
		}
		r.impossible = true
		return false, fmt.Sprintf("Slurm job %s has a time limit of %s, not more than sluice.io/renew-before %s: it is not renewed", js.JobID, js.LimitEnd.Sub(js.StartTime), r.before)
	case js.LimitEnd.Sub(now) > r.before:
		return false, ""
	}
	r.succ = &successor{gen: r.next}
	r.next++
	return true, ""
}

// submitSuccessor submits the successor job st.renew.succ names: the pod's
// job again, under the renewal's own name and directory. A job of that name
// that exists (sluice-vk restarted meanwhile) is adopted, not submitted twice.
func (p *Provider) submitSuccessor(ctx context.Context, st *podState) {
	st.op.Lock()
	defer st.op.Unlock()
	p.mu.Lock()
	pod, succ := st.pod.DeepCopy(), st.renew.succ
	deleting := st.deleting
	p.mu.Unlock()
	if deleting || succ == nil {
		return
	}
	select {
	case p.submits <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-p.submits }()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SubmitTimeout)
	defer cancel()
	job, err := p.successorJob(ctx, pod, succ.gen)
	var id slurm.JobID
	if err == nil {
		id, err = p.cfg.Jobs.Submit(ctx, job)
	}
	if err != nil {
		p.successorFailed(st, succ, fmt.Sprintf("successor job (renewal %d) not submitted: %v", succ.gen, err))
		return
	}
	p.mu.Lock()
	succ.ref = p.cfg.Jobs.Ref(pod.Namespace, job.UID, id)
	succ.containers, succ.runtimeOptions, succ.socketDir, succ.forwardEntry = jobSide(job)
	cur := st.ref.JobID
	p.mu.Unlock()
	p.event(pod, corev1.EventTypeNormal, EventSuccessorSubmitted, "submitted Slurm job %s (renewal %d) to take over from Slurm job %s before its time limit", id, succ.gen, cur)
	p.log.Info("provider: successor submitted", "pod", keyOf(pod), "job", id, "renewal", succ.gen, "current", cur)
}

// successorJob is the pod's job as its renewal gen: the same script and
// resources, under the renewal's name. The pod's own UID stays what the
// containers see (the downward API).
func (p *Provider) successorJob(ctx context.Context, pod *corev1.Pod, gen int) (*jobscript.Job, error) {
	jobPod := pod
	if p.cfg.Shadows != nil && shadow.Wanted(pod) {
		jobPod = shadow.Offloaded(pod)
	}
	job, err := jobscript.FromPod(ctx, jobPod, sources{client: p.cfg.Client, pod: pod}, jobscript.PodOptions{Runtime: p.cfg.Runtime, Site: p.cfg.Site})
	if err != nil {
		return nil, err
	}
	if err := p.relaySide(ctx, pod, job); err != nil {
		return nil, err
	}
	job.UID = renewalUID(string(pod.UID), gen)
	job.Annotations = prefixed(pod.Annotations)
	return job, nil
}

// successorFailed drops a successor that failed, and holds the next one
// back: the back-off doubles with each failure in a row.
func (p *Provider) successorFailed(st *podState, succ *successor, msg string) {
	p.mu.Lock()
	r := st.renew
	if r.succ != succ {
		p.mu.Unlock()
		return
	}
	r.succ = nil
	delay := p.backoff(r.failures)
	r.retryAt = p.cfg.Now().Add(delay)
	r.failures++
	pod, ref := st.pod.DeepCopy(), succ.ref
	p.mu.Unlock()
	p.event(pod, corev1.EventTypeWarning, EventSuccessorFailed, "%s; another is tried in %s", msg, delay)
	p.log.Warn("provider: successor failed", "pod", keyOf(pod), "job", ref.JobID, "reason", msg)
	if ref.JobID != "" {
		p.background(func(ctx context.Context) { p.dropJob(ctx, pod, ref) })
	}
}

// dropJob cancels a job of the pod that no longer serves it and removes
// its directory.
func (p *Provider) dropJob(ctx context.Context, pod *corev1.Pod, ref slurm.JobRef) {
	if !p.retry(ctx, "cancel", pod, func() error { return p.cfg.Jobs.Cancel(ctx, ref) }) {
		return
	}
	p.cfg.Jobs.EndLogs(ref.UID)
	p.retry(ctx, "remove", pod, func() error { return p.cfg.Jobs.Remove(ctx, ref) })
}

// updateSuccessor applies one status of the successor: one that ended
// failed, one whose containers are ready takes over.
func (p *Provider) updateSuccessor(st *podState, js slurm.Status) {
	p.mu.Lock()
	r := st.renew
	if r == nil || r.succ == nil || st.deleting || st.final {
		p.mu.Unlock()
		return
	}
	succ := r.succ
	succ.last = js
	ready := successorReady(st.pod, js) && !succ.handing
	if ready {
		succ.handing = true
	}
	p.mu.Unlock()
	switch {
	case js.State.Final() || js.State == slurm.StateUnknown:
		p.successorFailed(st, succ, fmt.Sprintf("successor Slurm job %s (renewal %d) ended %s%s", js.JobID, succ.gen, js.State, reasonText(js.Reason)))
	case ready:
		p.background(func(ctx context.Context) { p.handOver(ctx, st, succ) })
	}
}

// successorReady reports whether the successor can serve: its job runs and
// each of the pod's offloaded containers has started and not ended, and
// passes its readiness probe where it has one (Site.EnableProbes).
func successorReady(pod *corev1.Pod, js slurm.Status) bool {
	if js.State != slurm.StateRunning || js.BatchHost == "" {
		return false
	}
	for _, c := range shadow.Offloaded(pod).Spec.Containers {
		cs, ok := js.Containers[c.Name]
		if !ok || !cs.Started || cs.Finished || (cs.Ready != nil && !*cs.Ready) {
			return false
		}
	}
	return true
}

// otherJobs are the pod's jobs besides the current one, for its deletion:
// the successor (or, when none is known, the one a submission cut short by
// a restart may have made) and the job handed over from. The caller holds
// p.mu.
func (p *Provider) otherJobs(st *podState) []slurm.JobRef {
	r := st.renew
	if r == nil {
		return nil
	}
	var refs []slurm.JobRef
	if r.succ != nil && r.succ.ref.UID != "" {
		refs = append(refs, r.succ.ref)
	} else {
		refs = append(refs, p.cfg.Jobs.Ref(st.pod.Namespace, renewalUID(string(st.pod.UID), r.next), ""))
	}
	if r.prev != nil {
		refs = append(refs, *r.prev)
	}
	return refs
}

// dropOthers cancels the jobs of otherJobs and removes their directories;
// false means ctx ended.
func (p *Provider) dropOthers(ctx context.Context, pod *corev1.Pod, refs []slurm.JobRef) bool {
	for _, ref := range refs {
		if !p.retry(ctx, "remove", pod, func() error { return p.cfg.Jobs.Remove(ctx, ref) }) {
			return false
		}
		p.cfg.Jobs.EndLogs(ref.UID)
	}
	return true
}

// renewAfter runs after each status of the current job: it submits a
// successor when one is due, drops it when the pod ended, and tells a
// renewal that cannot be.
func (p *Provider) renewAfter(st *podState, js slurm.Status) {
	p.mu.Lock()
	var drop *successor
	if st.final && st.renew != nil && st.renew.succ != nil {
		drop, st.renew.succ = st.renew.succ, nil
	}
	submit, impossible := false, ""
	if drop == nil {
		submit, impossible = p.renewDue(st, js)
	}
	pod := st.pod.DeepCopy()
	p.mu.Unlock()
	switch {
	case drop != nil && drop.ref.UID != "":
		p.background(func(ctx context.Context) { p.dropJob(ctx, pod, drop.ref) })
	case impossible != "":
		p.event(pod, corev1.EventTypeWarning, EventRenewalImpossible, "%s", impossible)
	case submit:
		p.background(func(ctx context.Context) { p.submitSuccessor(ctx, st) })
	}
}

// lateForSuccessor takes a job that reached its time limit before its
// successor ran: the pod is not Ready, and stays Running, until the
// successor takes over. It reports false for any other status, which ends
// the pod as usual. The caller holds p.mu.
func (p *Provider) lateForSuccessor(st *podState, js slurm.Status) (tell bool, held bool) {
	r := st.renew
	if r == nil || js.State != slurm.StateTimeout {
		return false, false
	}
	st.last = js
	tell = !r.late
	r.late = true
	now := p.cfg.Now()
	for i := range st.pod.Status.ContainerStatuses {
		st.pod.Status.ContainerStatuses[i].Ready = false
	}
	msg := fmt.Sprintf("Slurm job %s reached its time limit before its successor ran", js.JobID)
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(&st.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse,
			Reason: reasonWaitingForSuccessor, Message: msg, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))})
	}
	return tell, true
}
