package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Finalizer holds a pod in the API server until its job is cancelled and
// its job directory removed, so that a deletion survives a restart of the
// virtual kubelet and no job is leaked. It is set before the job is
// submitted.
const Finalizer = "sluice.io/slurm-job"

func hasFinalizer(pod *corev1.Pod) bool { return slices.Contains(pod.Finalizers, Finalizer) }

// addFinalizer sets the finalizer on the pod (a strategic merge patch: other
// finalizers are kept).
func (p *Provider) addFinalizer(ctx context.Context, pod *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": pod.UID, "finalizers": []string{Finalizer},
	}})
	if err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	_, err = p.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	return nil
}

// removeFinalizer takes the finalizer off the pod. A pod already gone, or
// replaced by another of the same name, is not an error.
func (p *Provider) removeFinalizer(ctx context.Context, pod *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": pod.UID, "$deleteFromPrimitiveList/finalizers": []string{Finalizer},
	}})
	if err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	_, err = p.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// finishDeletion deletes, with no grace period, a pod that the API server
// marked for deletion once its job is gone, as a kubelet does when its
// containers stopped; a pod not marked for deletion is left alone.
func (p *Provider) finishDeletion(ctx context.Context, pod *corev1.Pod) error {
	cur, err := p.cfg.Pods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID || cur.DeletionTimestamp == nil {
		return nil
	}
	opts := metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(pod.UID))}
	err = p.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete pod: %w", err)
	}
	return nil
}
