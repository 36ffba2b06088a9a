package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
)

func TestRunningJobOnlyWhileTheJobRuns(t *testing.T) {
	pod := testPod("ok")
	h := newHarness(t, nil, pod)
	if _, err := h.p.RunningJob("ns", "other"); !errdefs.IsNotFound(err) {
		t.Errorf("got %v for a pod not on the node; want NotFound", err)
	}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	h.waitPhase(pod, corev1.PodPending)
	if _, err := h.p.RunningJob("ns", "ok"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("got %v for a pending job; want ErrNotRunning", err)
	}

	h.jobs.setState("uid-ok", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitPhase(pod, corev1.PodRunning)
	h.waitEvent("Slurm job 101 running on node node1")
	job, err := h.p.RunningJob("ns", "ok")
	if err != nil || job.Host != "node1" || job.Ref.JobID != "101" || job.Pod == nil || job.Pod.Name != "ok" {
		t.Fatalf("got %+v, %v; want job 101 on node1 with its pod", job, err)
	}
	if c, ok := job.Container("main"); !ok || c.EnvFile == "" {
		t.Errorf("got container main %+v, %v; want it as submitted", c, ok)
	}
	if job.ForwardEntry != "" {
		t.Errorf("forward entry %q for a job without a relay; want none", job.ForwardEntry)
	}
	if _, ok := job.Container("nope"); ok {
		t.Errorf("got a container nope; want none")
	}

	h.jobs.setState("uid-ok", slurm.Status{State: slurm.StateCompleted, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	h.waitPhase(pod, corev1.PodSucceeded)
	h.waitEvent("Slurm job 101 completed")
	_, err = h.p.RunningJob("ns", "ok")
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "Slurm job 101 is COMPLETED") {
		t.Errorf("got %v for a completed job; want ErrNotRunning naming the job and its state", err)
	}
}
