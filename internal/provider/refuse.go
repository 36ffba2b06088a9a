package provider

import (
	"fmt"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// precheck refuses, before anything is read or submitted, a pod the node
// will not run whatever it holds: one of a foreign namespace on a confined
// node (S3). FromPod refuses the rest.
func (p *Provider) precheck(pod *corev1.Pod) *slurm.PodError {
	if p.cfg.RefuseForeignPods && p.cfg.TenantNamespace != "" && pod.Namespace != p.cfg.TenantNamespace {
		return &slurm.PodError{
			Field:  "metadata.namespace",
			Reason: fmt.Sprintf("node %s runs pods of namespace %s only (Network.RefuseForeignPods)", p.cfg.NodeName, p.cfg.TenantNamespace),
		}
	}
	return nil
}

// refuse fails a pod that cannot run (S6): phase Failed, reason
// SluiceRefused, a message naming the field or annotation and the rule, its
// containers waiting for nothing, and a Warning Event. Nothing was submitted.
func (p *Provider) refuse(st *podState, perr *slurm.PodError) {
	msg := "refused: " + perr.Error()
	p.mu.Lock()
	s := waitingStatus(st.pod, st.pod.Status, ReasonRefused, msg)
	s.Phase = corev1.PodFailed
	s.Reason = ReasonRefused
	s.Message = msg
	s.Conditions = conditions(s.Conditions, p.cfg.Now(), true, false, false, ReasonRefused)
	st.pod.Status = s
	st.final = true
	pod := st.pod.DeepCopy()
	p.mu.Unlock()
	p.event(pod, corev1.EventTypeWarning, ReasonRefused, "%s", msg)
	p.log.Warn("provider: pod refused", "pod", keyOf(pod), "uid", pod.UID, "field", perr.Field, "reason", perr.Reason)
	p.push(st)
}
