package shadow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/sitepath"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// nodePatch is the merge patch SetNode sends.
type nodePatch struct {
	Data map[string]string `json:"data"`
}

// SetNode tells pod's shadow the compute node its job runs on, the job's
// Slurm id and the pod's socket directory on the node (for a reverse
// tunnel, else ""), by writing them to the node ConfigMap; a node "" says
// that it has none (yet, or again after a requeue). node must be a host
// name or an IP literal (tunnel.CheckNode), job a Slurm job id
// (tunnel.CheckJob), socketDir a site path (sitepath.Check): they end up in
// SSH requests. The ConfigMap must exist (Ensure).
func (m *Manager) SetNode(ctx context.Context, pod *corev1.Pod, node, job, socketDir string) error {
	if node != "" {
		if err := tunnel.CheckNode(node); err != nil {
			return fmt.Errorf("shadow: set node: %w", err)
		}
	}
	if err := tunnel.CheckJob(job); err != nil {
		return fmt.Errorf("shadow: set node: %w", err)
	}
	if socketDir != "" {
		if err := sitepath.Check(socketDir); err != nil {
			return fmt.Errorf("shadow: set node: socket directory %w", err)
		}
	}
	ns, name := m.where(pod)
	if err := m.access(ns); err != nil {
		return err
	}
	tunnels := strconv.Itoa(m.countTunnels(pod))
	patch, err := json.Marshal(nodePatch{Data: map[string]string{NodeKey: node, JobKey: job, SocketDirKey: socketDir, TunnelsKey: tunnels}})
	if err != nil {
		return fmt.Errorf("shadow: set node: %w", err)
	}
	cm := NodeConfigMap(name)
	if _, err := m.Client.CoreV1().ConfigMaps(ns).Patch(ctx, cm, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("shadow: set node of configmap %s/%s: %w", ns, cm, err)
	}
	m.nudge(ctx, pod, job+"@"+node)
	return nil
}

// nudge marks the pods of pod's shadow with what the node ConfigMap now
// says (JOB@NODE). A kubelet brings a mounted ConfigMap up to date when it
// syncs the pod, which it does at once on a change of the pod and otherwise
// only every minute or so: without the nudge a tunnel learns its job's node
// up to a minute late. Best effort: the periodic sync delivers it anyway, so
// a failure is logged, not returned.
func (m *Manager) nudge(ctx context.Context, pod *corev1.Pod, jobAtNode string) {
	ns, name := m.where(pod)
	sel := labels.Set{LabelShadow: name, LabelPodUID: string(pod.UID)}.AsSelector().String()
	list, err := m.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		m.log().Warn("shadow: cannot nudge the shadow's pods to read their node now", "shadow", ns+"/"+name, "error", err)
		return
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{annotationNodeOfJob: jobAtNode},
	}})
	if err != nil {
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || p.Annotations[annotationNodeOfJob] == jobAtNode {
			continue
		}
		if _, err := m.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			m.log().Warn("shadow: cannot nudge a shadow pod to read its node now", "pod", ns+"/"+p.Name, "error", err)
		}
	}
}

// ShadowPod returns the current pod of pod's shadow Deployment, or nil when
// there is none: a running one if there is one, else the newest, those
// being deleted last. The kept init containers' status and logs are its.
func (m *Manager) ShadowPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	ns, name := m.where(pod)
	if err := m.access(ns); err != nil {
		return nil, err
	}
	sel := labels.Set{LabelShadow: name, LabelPodUID: string(pod.UID)}.AsSelector().String()
	list, err := m.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("shadow: list pods of %s/%s: %w", ns, name, err)
	}
	var best *corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; best == nil || better(p, best) {
			best = p
		}
	}
	return best, nil
}

// better tells whether shadow pod a is a better pick than b.
func better(a, b *corev1.Pod) bool {
	if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
		return a.DeletionTimestamp == nil
	}
	if ra, rb := a.Status.Phase == corev1.PodRunning, b.Status.Phase == corev1.PodRunning; ra != rb {
		return ra
	}
	return b.CreationTimestamp.Before(&a.CreationTimestamp)
}

// where are the namespace and name of pod's shadow.
func (m *Manager) where(pod *corev1.Pod) (ns, name string) {
	return Namespace(pod, m.Spec.TenantNamespace), Name(pod)
}

func hasTCP(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if len(tcpPorts(c)) > 0 {
			return true
		}
	}
	return false
}

// KeptInitDone tells whether the kept init containers of shadow, a shadow
// pod (ShadowPod), have completed: every one exited 0 (a sidecar, restart
// policy Always, has started). It returns an error naming the container
// when one has failed; the Deployment runs it again, so the caller decides
// whether to wait or give up. A nil shadow has not completed.
func KeptInitDone(shadow *corev1.Pod) (bool, error) {
	if shadow == nil {
		return false, nil
	}
	status := map[string]corev1.ContainerStatus{}
	for _, s := range shadow.Status.InitContainerStatuses {
		status[s.Name] = s
	}
	for _, c := range shadow.Spec.InitContainers {
		s, ok := status[c.Name]
		if !ok {
			return false, nil
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			if s.Started == nil || !*s.Started {
				return false, nil
			}
			continue
		}
		if t := s.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
			if t != nil && t.ExitCode != 0 {
				return false, fmt.Errorf("shadow: kept init container %s exited with code %d (%s)", c.Name, t.ExitCode, t.Reason)
			}
		}
		return false, nil
	}
	return true, nil
}
