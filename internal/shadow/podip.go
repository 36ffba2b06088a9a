package shadow

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodIP is the address of the offloaded pod in the cluster: its running
// shadow pod's IP, where the forward tunnel listens on each exposed port,
// so that a Service selecting the offloaded pod reaches the job through
// the endpoint the EndpointSlice controller makes of it (a ClusterIP would
// not do: kube-proxy translates a connection once, and rejects one still
// addressed to a ClusterIP after that). Until the shadow pod runs, a pod
// exposing TCP ports has its shadow Service's ClusterIP, stable and
// reaching the same ports once the tunnel is up. It is "" while neither is
// known (or the pod gets no shadow). It looks in the shadow's own
// namespace: the tenant namespace on a confined node.
func (m *Manager) PodIP(ctx context.Context, pod *corev1.Pod) (string, error) {
	if !Wanted(pod) {
		return "", nil
	}
	ns, name := m.where(pod)
	if err := m.access(ns); err != nil {
		return "", err
	}
	sp, err := m.ShadowPod(ctx, pod)
	if err != nil {
		return "", err
	}
	if ip := ServedIP(sp); ip != "" || !hasTCP(pod) {
		return ip, nil
	}
	svc, err := m.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("shadow: get service %s/%s: %w", ns, name, err)
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return "", nil
	}
	return svc.Spec.ClusterIP, nil
}

// ServedIP is the address at which shadow pod sp (ShadowPod, ShadowPods;
// nil if none) serves the offloaded pod: its IP while it runs and is not
// being deleted, else "".
func ServedIP(sp *corev1.Pod) string {
	if sp == nil || sp.DeletionTimestamp != nil || sp.Status.Phase != corev1.PodRunning {
		return ""
	}
	return sp.Status.PodIP
}
