package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
)

// refusal is why a pod cannot run: the status and Event reason, the field
// or annotation at fault, and the rule it breaks.
type refusal struct {
	reason string
	field  string
	rule   string
}

func (r *refusal) message() string { return "refused: " + r.field + ": " + r.rule }

// precheck refuses, before anything is read or submitted, a pod the node
// will not run whatever it holds (S6): one of a foreign namespace on a
// confined node (S3), or one asking for a reverse tunnel the node cannot
// give. FromPod refuses the rest.
func (p *Provider) precheck(pod *corev1.Pod) *refusal {
	if p.cfg.RefuseForeignPods && p.cfg.TenantNamespace != "" && pod.Namespace != p.cfg.TenantNamespace {
		return &refusal{
			reason: ReasonRefused,
			field:  "metadata.namespace",
			rule:   fmt.Sprintf("node %s runs pods of namespace %s only (Network.RefuseForeignPods)", p.cfg.NodeName, p.cfg.TenantNamespace),
		}
	}
	if _, r := renewBefore(pod); r != nil {
		return r
	}
	r, err := annotations.Parse(pod.Annotations, pod.Namespace)
	if err == nil {
		err = annotations.Check(r, pod.Annotations, p.cfg.Reverse)
	}
	var ref *annotations.Refusal
	switch {
	case errors.As(err, &ref):
		return &refusal{reason: string(ref.Reason), field: "metadata.annotations[" + ref.Annotation + "]", rule: ruleOf(ref)}
	case err != nil:
		return &refusal{reason: ReasonRefused, field: "metadata", rule: err.Error()}
	}
	return nil
}

// ruleOf is the rule a reverse tunnel refusal names, with the offending
// entry when there is one.
func ruleOf(r *annotations.Refusal) string {
	if r.Entry != "" {
		return fmt.Sprintf("entry %q: %s", r.Entry, r.Rule)
	}
	return r.Rule
}

// podRefusal is the refusal of a pod FromPod could not turn into a job.
func podRefusal(perr *jobscript.PodError) *refusal {
	return &refusal{reason: ReasonRefused, field: perr.Field, rule: perr.Reason}
}

// refuse fails a pod that cannot run (S6): phase Failed, the refusal's
// reason, a message naming the field or annotation and the rule, its
// containers waiting for nothing, and a Warning Event. Nothing was submitted
// by this process; a job submitted before a restart (the pod's annotations,
// or the node's rules, changed meanwhile) is cancelled (cancelRefused).
func (p *Provider) refuse(st *podState, r *refusal) {
	msg := r.message()
	p.mu.Lock()
	s := waitingStatus(st.pod, st.pod.Status, r.reason, msg)
	s.Phase = corev1.PodFailed
	s.Reason = r.reason
	s.Message = msg
	s.Conditions = conditions(s.Conditions, p.cfg.Now(), true, false, false, r.reason)
	st.pod.Status = s
	st.final = true
	pod := st.pod.DeepCopy()
	before := st.adoptable && !st.submitted
	p.mu.Unlock()
	if before {
		p.cancelRefused(st, pod)
	}
	p.metrics.refused(r.reason)
	p.event(pod, corev1.EventTypeWarning, r.reason, "%s", msg)
	p.log.Warn("provider: pod refused", "pod", keyOf(pod), "uid", pod.UID, "field", r.field, "reason", r.reason, "rule", r.rule)
	p.push(st)
}

// cancelRefused cancels, in the background, the job that pod, refused, may
// have from before a restart: a Failed pod must leave no job running at the
// site, where its controller's replacement would run beside it and its
// quota would no longer count it. Slurm is asked by the pod's name: a pod
// refused at its first look has no job ID yet, and one without a job costs
// one squeue.
func (p *Provider) cancelRefused(st *podState, pod *corev1.Pod) {
	p.background(func(ctx context.Context) {
		p.mu.Lock()
		ref := st.ref
		p.mu.Unlock()
		if p.retry(ctx, "cancel", pod, func() error { return p.cfg.Jobs.Cancel(ctx, ref) }) {
			p.event(pod, corev1.EventTypeNormal, EventCancelled, "cancelled the pod's Slurm job, submitted before sluice-vk restarted: the pod is refused")
			p.log.Info("provider: job of a refused pod cancelled", "pod", keyOf(pod), "uid", pod.UID)
		}
	})
}
