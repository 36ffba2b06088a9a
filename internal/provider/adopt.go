package provider

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// adopt takes up, at start-up, the pods bound to the node that carry the
// job finalizer, so that nothing a previous run started is lost:
//
//   - a pod marked for deletion has its deletion run again (its job is
//     cancelled and its directory removed; the pod controller does not call
//     DeletePod for it while the finalizer holds it);
//   - a pod in a terminal phase is held again, so that its logs stay
//     readable and its deletion cleans its job up;
//   - any other is left to the pod controller, whose CreatePod adopts its
//     job (Submit finds job.id or the job's name and submits nothing).
func (p *Provider) adopt(ctx context.Context) error {
	list, err := p.cfg.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", p.cfg.NodeName).String(),
	})
	if err != nil {
		return fmt.Errorf("adopt pods of node %s: %w", p.cfg.NodeName, err)
	}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.Spec.NodeName != p.cfg.NodeName || !hasFinalizer(pod) {
			continue
		}
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if pod.DeletionTimestamp == nil && !terminal {
			continue
		}
		st := &podState{
			pod:       pod.DeepCopy(),
			ref:       p.cfg.Jobs.Ref(pod.Namespace, string(pod.UID), ""),
			submitted: true,
			final:     terminal,
			finalizer: true,
		}
		p.mu.Lock()
		p.pods[keyOf(pod)] = st
		p.mu.Unlock()
		p.log.Info("provider: adopted pod", "pod", keyOf(pod), "uid", pod.UID, "phase", pod.Status.Phase, "deleting", pod.DeletionTimestamp != nil)
		if pod.DeletionTimestamp != nil {
			p.startDelete(st)
		}
	}
	return nil
}
