package provider

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeleteCancelsUntilSlurmAgrees(t *testing.T) {
	pod := testPod("del")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	h.jobs.setState("uid-del", slurm.Status{State: slurm.StateRunning, Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitPhase(pod, corev1.PodRunning)

	h.jobs.cancelErrs = []error{errSite, errSite}
	h.markDeleted(pod)
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the pod to be forgotten", func() bool {
		_, err := h.p.GetPod(context.Background(), "ns", "del")
		return err != nil
	})
	_, _, cancels, removes := h.jobs.counts()
	if cancels != 3 || removes != 1 {
		t.Errorf("got %d Cancel and %d Remove calls; want 3 (two failures) and 1", cancels, removes)
	}
	if ref := h.jobs.removes[0]; ref.JobID != "101" || ref.UID != "uid-del" {
		t.Errorf("got Remove of %+v; want job 101 of uid-del", ref)
	}
	got := h.last(pod)
	for _, cs := range got.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			t.Errorf("got container %s state %+v after deletion; want terminated", cs.Name, cs.State)
		}
	}
	h.waitEvent("cancelled Slurm job 101")
	// the API server's pod lost the finalizer and was deleted with no grace
	if _, err := h.client.CoreV1().Pods("ns").Get(context.Background(), "del", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("got %v getting the deleted pod; want NotFound", err)
	}
}

func TestDeleteWaitsForSubmission(t *testing.T) {
	pod := testPod("race")
	h := newHarness(t, nil, pod)
	// the site fails a while: the submission retries while the pod is deleted
	h.jobs.submitErrs = []error{errSite, errSite, errSite}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the pod to be forgotten", func() bool {
		_, err := h.p.GetPod(context.Background(), "ns", "race")
		return err != nil
	})
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	if len(h.jobs.jobs) != 0 && len(h.jobs.cancels) == 0 {
		t.Errorf("got a job submitted and never cancelled: %v", h.jobs.jobs)
	}
}

func TestAdoptAtStart(t *testing.T) {
	deleting := testPod("deleting")
	deleting.Finalizers = []string{Finalizer}
	now := metav1.NewTime(time.Now())
	deleting.DeletionTimestamp = &now
	done := testPod("done")
	done.Finalizers = []string{Finalizer}
	done.Status.Phase = corev1.PodSucceeded
	running := testPod("running")
	running.Finalizers = []string{Finalizer}
	running.Status.Phase = corev1.PodRunning
	other := testPod("other")
	other.Spec.NodeName = "elsewhere"
	other.Finalizers = []string{Finalizer}
	other.Status.Phase = corev1.PodSucceeded

	h := newHarness(t, nil, deleting, done, running, other)
	h.waitFor("the deleting pod's job to be removed", func() bool {
		_, _, _, removes := h.jobs.counts()
		return removes == 1
	})
	if ref := h.jobs.removes[0]; ref.UID != "uid-deleting" {
		t.Errorf("got Remove of %s; want uid-deleting", ref.UID)
	}
	if _, err := h.p.GetPod(context.Background(), "ns", "done"); err != nil {
		t.Errorf("GetPod(done): %v; want the finished pod held for its logs", err)
	}
	for _, name := range []string{"running", "other"} {
		if _, err := h.p.GetPod(context.Background(), "ns", name); err == nil {
			t.Errorf("GetPod(%s) found it; want it left to the pod controller", name)
		}
	}

	// the pod controller then creates the running pod: its job is adopted
	h.jobs.mu.Lock()
	h.jobs.jobs["uid-running"] = "77"
	h.jobs.mu.Unlock()
	if err := h.p.CreatePod(context.Background(), running); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Normal Adopted adopted Slurm job 77")
	if len(h.jobs.jobs) != 1 {
		t.Errorf("got jobs %v; want only the adopted one", h.jobs.jobs)
	}
}
