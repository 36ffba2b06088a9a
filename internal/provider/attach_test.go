package provider

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

func TestFollowOutputFromItsEnd(t *testing.T) {
	pod := testPod("att")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	if _, err := h.p.FollowOutput(context.Background(), "ns", "att", "main"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("got %v for a pending job; want ErrNotRunning", err)
	}
	h.jobs.setState("uid-att", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitPhase(pod, corev1.PodRunning)
	h.jobs.mu.Lock()
	h.jobs.logs = map[string]string{"main": "from now on\n"}
	h.jobs.logOpts = nil
	h.jobs.mu.Unlock()
	rc, err := h.p.FollowOutput(context.Background(), "ns", "att", "main")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	h.jobs.mu.Lock()
	opts := h.jobs.logOpts
	h.jobs.mu.Unlock()
	if string(b) != "from now on\n" || len(opts) != 1 || opts[0] != (slurm.LogOptions{Tail: 0, Follow: true}) {
		t.Errorf("got %q with options %+v; want the log followed from its end (Tail 0, Follow)", b, opts)
	}
	if _, err := h.p.FollowOutput(context.Background(), "ns", "att", "nope"); err == nil {
		t.Error("got no error for a container not in the job")
	}
}
