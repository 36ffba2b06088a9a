package shadow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConditionOffloadedReady is the readiness gate of every shadow pod: the
// offloaded pod's Ready, which the virtual kubelet writes onto the shadow
// pod (SetOffloadedReady). The shadow pod is Ready, and its Service sends
// connections, only while the offloaded pod is Ready and the forward
// tunnel is up (its container's readiness).
const ConditionOffloadedReady corev1.PodConditionType = "sluice.io/OffloadedPodReady"

// OffloadedReady is the status of shadow pod sp's ConditionOffloadedReady
// ("" when it has none yet).
func OffloadedReady(sp *corev1.Pod) corev1.ConditionStatus {
	for _, c := range sp.Status.Conditions {
		if c.Type == ConditionOffloadedReady {
			return c.Status
		}
	}
	return ""
}

// SetOffloadedReady writes the offloaded pod's readiness onto its shadow
// pod sp as ConditionOffloadedReady. A shadow pod gone meanwhile is no
// error: its successor is written on the next round.
func (m *Manager) SetOffloadedReady(ctx context.Context, sp *corev1.Pod, ready bool, now time.Time) error {
	if err := m.access(sp.Namespace); err != nil {
		return err
	}
	c := corev1.PodCondition{Type: ConditionOffloadedReady, Status: corev1.ConditionFalse, Reason: "PodNotReady",
		Message: "the offloaded pod is not Ready", LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if ready {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, "PodReady", "the offloaded pod is Ready"
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{c}}})
	if err != nil {
		return fmt.Errorf("shadow: readiness patch: %w", err)
	}
	_, err = m.Client.CoreV1().Pods(sp.Namespace).Patch(ctx, sp.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("shadow: set the readiness of shadow pod %s/%s: %w", sp.Namespace, sp.Name, err)
	}
	return nil
}
