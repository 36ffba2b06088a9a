package provider

import (
	"errors"
	"fmt"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/slurm"
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
func podRefusal(perr *slurm.PodError) *refusal {
	return &refusal{reason: ReasonRefused, field: perr.Field, rule: perr.Reason}
}

// refuse fails a pod that cannot run (S6): phase Failed, the refusal's
// reason, a message naming the field or annotation and the rule, its
// containers waiting for nothing, and a Warning Event. Nothing was submitted.
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
	p.mu.Unlock()
	p.metrics.refused(r.reason)
	p.event(pod, corev1.EventTypeWarning, r.reason, "%s", msg)
	p.log.Warn("provider: pod refused", "pod", keyOf(pod), "uid", pod.UID, "field", r.field, "reason", r.reason, "rule", r.rule)
	p.push(st)
}
