package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A pod asking for GPUs that no flavor of the site has runs with the default
// flavor and a Warning Event NoGPUFlavor; one naming a flavor the site lacks
// gets FlavorNotFound; the job carries the flavor chosen.
func TestFlavorWarnings(t *testing.T) {
	site := jobscript.SiteOptions{
		DefaultFlavor: "cpu",
		Flavors: map[string]jobscript.Flavor{
			"cpu": {Name: "cpu", CPUs: 2, Flags: []string{"--partition=cpu"}},
			"gpu": {Name: "gpu", CPUs: 8, Flags: []string{"--gres=gpu:1"}, GPUs: 1},
		},
	}
	gpus := testPod("gpus")
	gpus.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
	named := testPod("named")
	named.Annotations = map[string]string{jobscript.AnnotationFlavor: "huge"}
	h := newHarness(t, func(c *Config) { c.Site = site }, gpus, named)
	ctx := context.Background()
	for _, pod := range []*corev1.Pod{gpus, named} {
		if err := h.p.CreatePod(ctx, pod); err != nil {
			t.Fatalf("CreatePod: %v", err)
		}
	}
	h.waitEvent("Warning " + jobscript.ReasonNoGPUFlavor + " the pod asks for 4 GPUs and no flavor of the site asks for 4; the job gets the default flavor cpu")
	h.waitEvent("Warning " + jobscript.ReasonFlavorNotFound + ` slurm-job.vk.io/flavor "huge": the site has no such flavor (it has cpu, gpu)`)
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	if j := h.jobs.lastJob; j == nil || j.Flavor != "cpu" || strings.Join(j.FlavorFlags, " ") != "--partition=cpu" {
		t.Errorf("got job %+v; want the default flavor cpu", j)
	}
}
