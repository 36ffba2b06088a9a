package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// daemonSetPod is a pod of DaemonSet ds, tolerating every taint as node
// agents do.
func daemonSetPod(name, ds string) *corev1.Pod {
	pod := testPod(name)
	yes := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds, UID: "uid-ds", Controller: &yes}}
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	return pod
}

// eventsWith counts the Events recorded so far that contain s.
func (h *harness) eventsWith(s string) int {
	h.drainEvents()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if strings.Contains(e, s) {
			n++
		}
	}
	return n
}

// A DaemonSet's pod that tolerates the node's taint is kept Pending with a
// reason and one Warning Event, never submitted and never failed (the
// DaemonSet controller would delete and recreate a failed one, forever);
// deleting it cancels nothing.
func TestDaemonSetPodStaysPendingUnsubmitted(t *testing.T) {
	pod := daemonSetPod("fluent-bit-x2k9p", "fluent-bit")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitFor("the pod pushed with the DaemonSet reason", func() bool {
		got := h.last(pod)
		return got != nil && got.Status.Reason == ReasonDaemonSetPod
	})
	h.waitEvent("Warning " + ReasonDaemonSetPod + " not run: pod of DaemonSet fluent-bit; node hpc runs no DaemonSet pods")

	// many poll intervals later: still Pending, nothing submitted, one Event
	time.Sleep(50 * time.Millisecond)
	got := h.last(pod)
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s; want Pending: a failed daemon pod is recreated by its DaemonSet, in a loop", got.Status.Phase)
	}
	if !strings.Contains(got.Status.Message, "type NotIn [virtual-kubelet]") {
		t.Errorf("message %q; want it to say how to keep the DaemonSet off", got.Status.Message)
	}
	if w := got.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != ReasonDaemonSetPod {
		t.Errorf("container state %+v; want waiting with reason %s", got.Status.ContainerStatuses[0].State, ReasonDaemonSetPod)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionFalse {
			t.Errorf("Ready is %s; want False", c.Status)
		}
	}
	if submits, statuses, _, _ := h.jobs.counts(); submits != 0 || statuses != 0 {
		t.Errorf("%d Submit and %d Status calls; want none for a DaemonSet pod", submits, statuses)
	}
	if n := h.eventsWith(ReasonDaemonSetPod); n != 1 {
		t.Errorf("%d %s Events; want 1", n, ReasonDaemonSetPod)
	}
	cur, err := h.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	if hasFinalizer(cur) {
		t.Error("the job finalizer was set on a pod that has no job")
	}

	h.markDeleted(pod)
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the pod forgotten", func() bool { return h.p.lookup(pod.Namespace, pod.Name) == nil })
	if submits, _, cancels, removes := h.jobs.counts(); submits+cancels+removes != 0 {
		t.Errorf("%d Submit, %d Cancel, %d Remove calls; want none", submits, cancels, removes)
	}
	if n := h.eventsWith(EventCancelled); n != 0 {
		t.Errorf("%d Cancelled Events; want none: no job was cancelled", n)
	}
}

// A DaemonSet's pod that already carries the reason (sluice-vk restarted,
// or a standby took over) is kept Pending again without a second Event.
func TestDaemonSetPodToldOnce(t *testing.T) {
	pod := daemonSetPod("node-exporter-7f2lq", "node-exporter")
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Reason: ReasonDaemonSetPod}
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitFor("the pod pushed with the DaemonSet reason", func() bool {
		got := h.last(pod)
		return got != nil && got.Status.Reason == ReasonDaemonSetPod && got.Status.Phase == corev1.PodPending
	})
	time.Sleep(20 * time.Millisecond)
	if n := h.eventsWith(ReasonDaemonSetPod); n != 0 {
		t.Errorf("%d %s Events; want none the second time", n, ReasonDaemonSetPod)
	}
	if submits, _, _, _ := h.jobs.counts(); submits != 0 {
		t.Errorf("%d Submit calls; want none", submits)
	}
}

// Only an owner of kind DaemonSet keeps a pod from running: a pod of a
// ReplicaSet or a Job, tolerating everything too, is submitted.
func TestOtherOwnersAreSubmitted(t *testing.T) {
	for _, kind := range []string{"ReplicaSet", "Job", "StatefulSet"} {
		t.Run(kind, func(t *testing.T) {
			pod := testPod("owned-by-" + strings.ToLower(kind))
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "x", UID: "uid-x"}}
			pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			h := newHarness(t, nil, pod)
			if err := h.p.CreatePod(context.Background(), pod); err != nil {
				t.Fatalf("CreatePod: %v", err)
			}
			h.waitFor("the job submitted", func() bool {
				submits, _, _, _ := h.jobs.counts()
				return submits == 1
			})
			if n := h.eventsWith(ReasonDaemonSetPod); n != 0 {
				t.Errorf("%d %s Events for a pod of a %s", n, ReasonDaemonSetPod, kind)
			}
		})
	}
}

// daemonSetOwner finds the DaemonSet among several owners, of any API
// group, and nothing when there is none.
func TestDaemonSetOwner(t *testing.T) {
	pod := testPod("p")
	if daemonSetOwner(pod) != nil {
		t.Error("a pod without owners has a DaemonSet owner")
	}
	pod.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "c"},
		{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet", Name: "advanced"},
	}
	if o := daemonSetOwner(pod); o == nil || o.Name != "advanced" {
		t.Errorf("daemonSetOwner = %+v; want the DaemonSet advanced", o)
	}
}
