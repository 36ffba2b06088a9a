package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	ok := testPod("ok")
	bad := testPod("bad")
	bad.UID = "uid-bad"
	bad.Annotations = map[string]string{annotations.ReverseForwards: "redis:6379"}
	h := newHarness(t, func(c *Config) { c.Metrics = reg }, ok, bad)
	for _, pod := range []*corev1.Pod{ok, bad} {
		if err := h.p.CreatePod(context.Background(), pod); err != nil {
			t.Fatalf("CreatePod: %v", err)
		}
	}
	h.waitPhase(bad, corev1.PodFailed)
	h.waitEvent("submitted as Slurm job")
	h.jobs.setState(string(ok.UID), slurm.Status{State: slurm.StateCompleted, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	h.waitPhase(ok, corev1.PodSucceeded)

	want := `
# HELP sluice_vk_jobs_finished_total Jobs that ended, by the pod phase they gave.
# TYPE sluice_vk_jobs_finished_total counter
sluice_vk_jobs_finished_total{phase="Succeeded"} 1
# HELP sluice_vk_jobs_submitted_total Pods turned into Slurm jobs, by how (submitted or adopted).
# TYPE sluice_vk_jobs_submitted_total counter
sluice_vk_jobs_submitted_total{how="submitted"} 1
# HELP sluice_vk_pods Pods on the virtual node, by phase.
# TYPE sluice_vk_pods gauge
sluice_vk_pods{phase="Failed"} 1
sluice_vk_pods{phase="Pending"} 0
sluice_vk_pods{phase="Running"} 0
sluice_vk_pods{phase="Succeeded"} 1
sluice_vk_pods{phase="Unknown"} 0
# HELP sluice_vk_refusals_total Pods refused at creation (S6), by reason.
# TYPE sluice_vk_refusals_total counter
sluice_vk_refusals_total{reason="ReverseNotEnabled"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"sluice_vk_jobs_finished_total", "sluice_vk_jobs_submitted_total", "sluice_vk_pods", "sluice_vk_refusals_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "sluice_vk_polls_total"); err != nil || n != 1 {
		t.Errorf("got %d polls series (%v); want 1", n, err)
	}
	if polls := testutil.ToFloat64(h.p.metrics.polls); polls < 1 {
		t.Errorf("got %v polls; want at least 1", polls)
	}
}
