package provider

import (
	"context"
	"testing"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// TestJobLimitOutcomes: a job Slurm ends for its memory or time limit fails
// the pod with the kubelet's reason, on the pod and its container, and an
// Event says why. The rig cannot make a real OUT_OF_MEMORY (it does not
// enforce memory), so this is where that mapping is tested through the
// provider.
func TestJobLimitOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		job        slurm.Status
		wantReason string
		wantCode   int32
		wantEvent  string
	}{
		{"out of memory, container killed before it wrote its code",
			slurm.Status{State: slurm.StateOutOfMemory, Exit: &slurm.ExitCode{Code: 0, Signal: 9},
				Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}},
			slurm.ReasonOOMKilled, 137, "Warning Failed Slurm job 101 ended OUT_OF_MEMORY (OOMKilled), exit code 0:9"},
		{"out of memory, container exited 137",
			slurm.Status{State: slurm.StateOutOfMemory, Exit: &slurm.ExitCode{Code: 137},
				Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true, ExitCode: 137}}},
			slurm.ReasonOOMKilled, 137, "Warning Failed Slurm job 101 ended OUT_OF_MEMORY (OOMKilled), exit code 137:0"},
		{"time limit, container ended by SIGTERM",
			slurm.Status{State: slurm.StateTimeout, Exit: &slurm.ExitCode{Code: 143},
				Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true, ExitCode: 143}}},
			slurm.ReasonDeadlineExceeded, 143, "Warning Failed Slurm job 101 ended TIMEOUT (DeadlineExceeded), exit code 143:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("limited")
			h := newHarness(t, nil, pod)
			if err := h.p.CreatePod(context.Background(), pod); err != nil {
				t.Fatalf("CreatePod: %v", err)
			}
			h.waitEvent("submitted as Slurm job")
			h.jobs.setState("uid-limited", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
				Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
			h.waitPhase(pod, corev1.PodRunning)
			h.jobs.setState("uid-limited", tc.job)
			got := h.waitPhase(pod, corev1.PodFailed)
			h.waitEvent(tc.wantEvent)
			if got.Status.Reason != tc.wantReason {
				t.Errorf("pod reason: got %q; want %q", got.Status.Reason, tc.wantReason)
			}
			term := got.Status.ContainerStatuses[0].State.Terminated
			if term == nil || term.Reason != tc.wantReason || term.ExitCode != tc.wantCode {
				t.Errorf("got container state %+v; want terminated, %s, exit code %d", got.Status.ContainerStatuses[0].State, tc.wantReason, tc.wantCode)
			}
		})
	}
}
