package provider

import (
	"context"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// pollLoop reads the status of every job of the node once per
// PollInterval, in one call, and pushes the pods whose status changed.
func (p *Provider) pollLoop(ctx context.Context) {
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	var lastErr string
	for {
		err := p.poll(ctx)
		switch {
		case err != nil && err.Error() != lastErr:
			p.log.Warn("provider: job status poll failed", "error", err)
			lastErr = err.Error()
		case err == nil && lastErr != "":
			p.log.Info("provider: job status poll works again")
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poll makes one round: pods being deleted start their deletion, and the
// jobs of the others are read with one Status call.
func (p *Provider) poll(ctx context.Context) error {
	var refs []slurm.JobRef
	byUID := map[string]*podState{}
	succOf := map[string]*podState{} // successors (renew.go), by their jobs' UIDs
	var deleting []*podState
	p.mu.Lock()
	for _, st := range p.pods {
		if !st.deleting && p.deletionRequested(st.pod) {
			deleting = append(deleting, st)
			continue
		}
		if st.submitted && !st.final && !st.deleting {
			refs = append(refs, st.ref)
			byUID[st.ref.UID] = st
			if r := st.renew; r != nil && r.succ != nil && r.succ.ref.JobID != "" {
				refs = append(refs, r.succ.ref)
				succOf[r.succ.ref.UID] = st
			}
		}
	}
	p.mu.Unlock()
	for _, st := range deleting {
		p.startDelete(st)
	}
	if len(refs) == 0 {
		return nil
	}
	start := time.Now()
	all, err := p.cfg.Jobs.Status(ctx, refs)
	p.metrics.poll(time.Since(start), err)
	if err != nil {
		return err
	}
	for uid, js := range all {
		if st := byUID[uid]; st != nil {
			p.update(ctx, st, js)
		}
	}
	for uid, js := range all { // once their current jobs' are known
		if st := succOf[uid]; st != nil {
			p.updateSuccessor(st, js)
		}
	}
	return nil
}

// deletionRequested reports whether the API server marked the pod for
// deletion (the pod lister is the pod controller's cache). A pod the cache
// does not hold is left to the pod controller, which calls DeletePod.
func (p *Provider) deletionRequested(pod *corev1.Pod) bool {
	cur, err := p.cfg.Pods.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && cur.UID == pod.UID && cur.DeletionTimestamp != nil
}

// update applies one job status to its pod: a new status is pushed, and
// each transition is told in an Event.
func (p *Provider) update(ctx context.Context, st *podState, js slurm.Status) {
	why := p.whyFailed(ctx, st, js)
	p.mu.Lock()
	if st.deleting {
		p.mu.Unlock()
		return
	}
	if tell, held := p.lateForSuccessor(st, js); held {
		pod := st.pod.DeepCopy()
		p.mu.Unlock()
		if tell {
			p.event(pod, corev1.EventTypeWarning, EventSuccessorLate, "Slurm job %s reached its time limit before its successor ran: the pod is not Ready until the successor is", js.JobID)
			p.push(st)
		}
		p.renewAfter(st, js)
		return
	}
	prev := st.last
	st.last = js
	old := st.pod.Status
	st.pod.Status = jobStatus(st.pod, old, js, st.kept, p.cfg.Now())
	if why != "" {
		st.pod.Status.Message += ": " + why
	}
	if st.tunnelCond != nil {
		setCondition(&st.pod.Status.Conditions, *st.tunnelCond)
	}
	if st.renew != nil && st.renew.gen > 0 {
		setCondition(&st.pod.Status.Conditions, currentJobCondition(st, p.cfg.Now()))
	}
	st.final = js.State.Final()
	if st.final {
		p.metrics.finish(st.pod.Status.Phase)
	}
	changed := !equality.Semantic.DeepEqual(old, st.pod.Status)
	pod := st.pod.DeepCopy()
	p.mu.Unlock()
	p.endLogs(st.ref.UID, prev, js, st.final)
	p.transitionEvents(pod, prev, js)
	p.readinessEvents(pod, prev, js)
	p.restartEvents(pod, prev, js)
	if js.BatchHost != "" && js.BatchHost != prev.BatchHost && !st.final {
		p.followNode(st, js.BatchHost)
	}
	if why != "" && prev.State != js.State {
		p.event(pod, corev1.EventTypeWarning, EventJobScriptFailed, "Slurm job %s failed before its containers started: %s", js.JobID, why)
	}
	if changed {
		p.push(st)
	}
	p.renewAfter(st, js)
}

// transitionEvents records what changed between two job statuses.
func (p *Provider) transitionEvents(pod *corev1.Pod, prev, cur slurm.Status) {
	if prev.State == cur.State && prev.BatchHost == cur.BatchHost {
		return
	}
	phase, reason := slurm.PodPhase(cur.State)
	prevPhase, _ := slurm.PodPhase(prev.State)
	switch {
	case phase == slurm.PhaseRunning && (prevPhase != slurm.PhaseRunning || prev.BatchHost != cur.BatchHost):
		p.event(pod, corev1.EventTypeNormal, EventRunning, "Slurm job %s running on node %s", cur.JobID, orUnknown(cur.BatchHost))
	case reason == slurm.ReasonRequeued && prev.State != "",
		// A requeued job is PENDING again, most often held back (BeginTime).
		phase == slurm.PhasePending && prevPhase == slurm.PhaseRunning:
		p.event(pod, corev1.EventTypeWarning, EventRequeued, "Slurm job %s requeued (%s%s)", cur.JobID, cur.State, reasonText(cur.Reason))
	case phase == slurm.PhaseSucceeded:
		p.event(pod, corev1.EventTypeNormal, EventSucceeded, "Slurm job %s completed on node %s", cur.JobID, orUnknown(cur.BatchHost))
	case phase == slurm.PhaseFailed:
		p.event(pod, corev1.EventTypeWarning, EventFailed, "Slurm job %s ended %s (%s)%s", cur.JobID, cur.State, reason, exitText(cur))
	case phase == slurm.PhaseUnknown:
		p.event(pod, corev1.EventTypeWarning, EventLost, "%s", cur.Reason)
	}
}

func orUnknown(host string) string {
	if host == "" {
		return "(unknown)"
	}
	return host
}

func exitText(js slurm.Status) string {
	if js.Exit == nil {
		return ""
	}
	return ", exit code " + js.Exit.String()
}

func reasonText(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

// anyStarted tells whether a container of the job started.
func anyStarted(js slurm.Status) bool {
	for _, cs := range js.Containers {
		if cs.Started {
			return true
		}
	}
	return false
}

// whyFailedTimeout bounds the read of why a job failed.
const whyFailedTimeout = 10 * time.Second

// whyFailed reads why a job that has just failed before any container
// started did (its batch script says so on job.out: the reverse tunnel not
// up, a port taken), or "" for any other status. It is read before the
// Failed status is pushed, not after: the virtual kubelet takes no status
// update of a pod the API server already holds as Failed, so a message
// added later would never be seen.
func (p *Provider) whyFailed(ctx context.Context, st *podState, js slurm.Status) string {
	if phase, _ := slurm.PodPhase(js.State); phase != slurm.PhaseFailed || anyStarted(js) {
		return ""
	}
	p.mu.Lock()
	ref, seen := st.ref, st.last.State == js.State
	p.mu.Unlock()
	if seen {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, whyFailedTimeout)
	defer cancel()
	msg, err := p.cfg.Jobs.FailureMessage(ctx, ref)
	if err != nil {
		p.log.Warn("provider: why the job failed is not known", "job", ref.JobID, "error", err)
		return ""
	}
	return msg
}
