package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// A job sbatch refuses for what it holds fails its pod with sbatch's own
// words after one attempt, instead of being submitted again at every
// backoff; deleting the pod still cleans its job directory up.
func TestSbatchRefusalFailsThePod(t *testing.T) {
	pod := testPod("refused-by-sbatch")
	h := newHarness(t, nil, pod)
	h.jobs.submitErrs = []error{&slurm.RefusedError{Message: "Invalid --time specification"}, errSite, errSite}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	got := h.waitPhase(pod, corev1.PodFailed)
	const want = "refused: sbatch: Invalid --time specification"
	if got.Status.Reason != ReasonRefused || got.Status.Message != want {
		t.Errorf("got reason %q message %q; want %s and %q", got.Status.Reason, got.Status.Message, ReasonRefused, want)
	}
	if w := got.Status.ContainerStatuses[0].State.Waiting; w == nil || !strings.Contains(w.Message, "Invalid --time specification") {
		t.Errorf("got container state %+v; want waiting with sbatch's message", got.Status.ContainerStatuses[0].State)
	}
	h.waitEvent("Warning " + ReasonRefused + " " + want)
	if submits, _, _, _ := h.jobs.counts(); submits != 1 {
		t.Errorf("got %d Submit calls; want 1: a refused job is not submitted again", submits)
	}

	h.markDeleted(pod)
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the job directory removed", func() bool {
		_, _, _, removes := h.jobs.counts()
		return removes == 1
	})
	if submits, _, _, _ := h.jobs.counts(); submits != 1 {
		t.Errorf("got %d Submit calls after the deletion; want 1", submits)
	}
}

// A job Submit cannot submit whatever the site does (a *PodError) fails
// its pod after one attempt too.
func TestSubmitPodErrorFailsThePod(t *testing.T) {
	pod := testPod("never-renders")
	h := newHarness(t, nil, pod)
	h.jobs.submitErrs = []error{&jobscript.PodError{Field: "spec", Reason: "render job script: boom"}, errSite}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	got := h.waitPhase(pod, corev1.PodFailed)
	if got.Status.Reason != ReasonRefused || got.Status.Message != "refused: spec: render job script: boom" {
		t.Errorf("got reason %q message %q; want %s naming the render error", got.Status.Reason, got.Status.Message, ReasonRefused)
	}
	if submits, _, _, _ := h.jobs.counts(); submits != 1 {
		t.Errorf("got %d Submit calls; want 1", submits)
	}
}
