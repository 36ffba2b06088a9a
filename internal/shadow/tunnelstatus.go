package shadow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodKey names a shadow pod in what ShadowPods returns: the namespace it
// runs in and the UID of the pod it is the shadow of (its LabelPodUID).
// The label alone would not do: whoever may create pods in a namespace of
// their own may give one the labels of someone else's shadow (the UID shows
// in squeue and in Events); only the namespace where sluice made the
// shadow tells the two apart.
type PodKey struct{ Namespace, PodUID string }

// ShadowPods returns the current pod of every shadow of the node (the one
// ShadowPod would pick) by its PodKey, with one List call. Look a pod's
// shadow up under the namespace its shadow was made in (Namespace).
func (m *Manager) ShadowPods(ctx context.Context) (map[PodKey]*corev1.Pod, error) {
	ns := metav1.NamespaceAll
	if m.Spec.TenantNamespace != "" {
		ns = m.Spec.TenantNamespace
	}
	if err := m.access(ns); err != nil {
		return nil, err
	}
	sel, err := m.selector()
	if err != nil {
		return nil, err
	}
	list, err := m.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("shadow: list shadow pods: %w", err)
	}
	out := map[PodKey]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		key := PodKey{Namespace: p.Namespace, PodUID: p.Labels[LabelPodUID]}
		if best := out[key]; key.PodUID != "" && (best == nil || better(p, best)) {
			out[key] = p
		}
	}
	return out, nil
}

// statusTimeout bounds one read of a tunnel's /status.
const statusTimeout = 3 * time.Second

// TunnelStatus reads the state of each tunnel container running in sp, a
// shadow pod, from its /status endpoint (tunnel.Snapshot), forward first.
// A container that is not running has no state to read and is left out; a
// shadow pod with no IP yet gives none.
func (m *Manager) TunnelStatus(ctx context.Context, sp *corev1.Pod) ([]tunnel.Snapshot, error) {
	if sp == nil || sp.Status.PodIP == "" {
		return nil, nil
	}
	running := map[string]bool{}
	for _, cs := range sp.Status.ContainerStatuses {
		running[cs.Name] = cs.State.Running != nil
	}
	var out []tunnel.Snapshot
	for _, c := range sp.Spec.Containers {
		if c.Name != ContainerForward && c.Name != ContainerReverse || !running[c.Name] {
			continue
		}
		port, ok := statusPort(c)
		if !ok {
			return out, fmt.Errorf("shadow: container %s of %s/%s has no --metrics port", c.Name, sp.Namespace, sp.Name)
		}
		snap, err := m.readStatus(ctx, "http://"+net.JoinHostPort(sp.Status.PodIP, strconv.Itoa(port))+"/status")
		if err != nil {
			return out, fmt.Errorf("shadow: tunnel status of %s/%s container %s: %w", sp.Namespace, sp.Name, c.Name, err)
		}
		out = append(out, snap)
	}
	return out, nil
}

func (m *Manager) readStatus(ctx context.Context, url string) (tunnel.Snapshot, error) {
	var snap tunnel.Snapshot
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return snap, err
	}
	client := m.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return snap, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return snap, err
	}
	if resp.StatusCode != http.StatusOK {
		return snap, fmt.Errorf("%s: %s", url, resp.Status)
	}
	if err := json.Unmarshal(body, &snap); err != nil {
		return snap, fmt.Errorf("%s: %w", url, err)
	}
	return snap, nil
}

// ForwardEntry reports whether sp, a shadow pod, has a forward tunnel
// (forward), and whether that tunnel goes through the job's relay, reading
// the pod's socket directory from the node ConfigMap (entry): its status
// then names the directory it reads (tunnel.Snapshot.EntryDir).
func ForwardEntry(sp *corev1.Pod) (entry, forward bool) {
	for _, c := range sp.Spec.Containers {
		if c.Name != ContainerForward {
			continue
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--entry-dir-file=") {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

// statusPort is the port of the metrics server of tunnel container c, from
// the --metrics flag that args.go gave it.
func statusPort(c corev1.Container) (int, bool) {
	for _, a := range c.Args {
		addr, ok := strings.CutPrefix(a, "--metrics=")
		if !ok {
			continue
		}
		_, p, ok := strings.Cut(addr, "):")
		if !ok {
			return 0, false
		}
		port, err := strconv.Atoi(p)
		return port, err == nil && port > 0 && port < 65536
	}
	return 0, false
}
