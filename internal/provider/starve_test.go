package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waitsForConfigMap is a pod whose container reads a key of a ConfigMap
// that does not exist yet.
func waitsForConfigMap(name, cm string) *corev1.Pod {
	pod := testPod(name)
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "k"},
	}}}
	return pod
}

// More pods than SubmitWorkers waiting for a ConfigMap must not keep
// another pod from being submitted: a slot is held by one attempt, not by
// a pod that waits.
func TestWaitingPodsDoNotStarveOthers(t *testing.T) {
	const workers = 2
	var waiting []*corev1.Pod
	for i := range workers + 1 {
		waiting = append(waiting, waitsForConfigMap(fmt.Sprintf("wait%d", i), "later"))
	}
	free := testPod("free")
	// a backoff long enough that a waiting pod spends its time asleep
	h := newHarness(t, func(c *Config) { c.SubmitWorkers = workers; c.Backoff = time.Hour }, append(waiting, free)...)
	for _, pod := range waiting {
		if err := h.p.CreatePod(context.Background(), pod); err != nil {
			t.Fatalf("CreatePod(%s): %v", pod.Name, err)
		}
	}
	for _, pod := range waiting {
		h.waitFor("pod "+pod.Name+" waiting for its ConfigMap", func() bool {
			got := h.last(pod)
			if got == nil || len(got.Status.ContainerStatuses) == 0 {
				return false
			}
			w := got.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == reasonConfigError
		})
	}

	if err := h.p.CreatePod(context.Background(), free); err != nil {
		t.Fatalf("CreatePod(free): %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	h.jobs.mu.Lock()
	uid := h.jobs.lastJob.UID
	h.jobs.mu.Unlock()
	if uid != string(free.UID) {
		t.Errorf("got job of %s submitted; want the free pod's", uid)
	}
}

// Deleting a pod whose submission waits (asleep between attempts) is not
// held up by that wait.
func TestDeleteDoesNotWaitForSubmissionBackoff(t *testing.T) {
	pod := waitsForConfigMap("gone", "never")
	h := newHarness(t, func(c *Config) { c.Backoff = time.Hour }, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Warning SubmitWaiting")
	h.markDeleted(pod)
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the pod to be forgotten", func() bool {
		_, err := h.p.GetPod(context.Background(), "ns", "gone")
		return err != nil
	})
	if submits, _, _, _ := h.jobs.counts(); submits != 0 {
		t.Errorf("got %d submissions; want none", submits)
	}
	if _, err := h.client.CoreV1().Pods("ns").Get(context.Background(), "gone", metav1.GetOptions{}); err == nil {
		t.Errorf("the deleted pod is still in the API server; want it deleted once its deletion ran")
	}
}

// A submission that hangs (an sbatch waiting on a slurmctld that does not
// answer) gives its slot back after SubmitTimeout: another pod is still
// submitted.
func TestHangingSubmissionGivesItsSlotBack(t *testing.T) {
	stuck, free := testPod("stuck"), testPod("free")
	h := newHarness(t, func(c *Config) {
		c.SubmitWorkers = 1
		c.SubmitTimeout = 20 * time.Millisecond
		c.Backoff = time.Hour
	}, stuck, free)
	h.jobs.hang = map[string]bool{string(stuck.UID): true}
	if err := h.p.CreatePod(context.Background(), stuck); err != nil {
		t.Fatalf("CreatePod(stuck): %v", err)
	}
	h.waitEvent("Warning SubmitWaiting context deadline exceeded")
	if err := h.p.CreatePod(context.Background(), free); err != nil {
		t.Fatalf("CreatePod(free): %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
}
