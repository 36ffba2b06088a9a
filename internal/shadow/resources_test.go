package shadow

import (
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResources: every sluice container requests and limits CPU and
// memory (the figures of resources.go); a kept container keeps its own.
func TestResources(t *testing.T) {
	tunnel := map[corev1.ResourceName][2]string{corev1.ResourceCPU: {"50m", "1"}, corev1.ResourceMemory: {"32Mi", "256Mi"}}
	hold := map[corev1.ResourceName][2]string{corev1.ResourceCPU: {"10m", "100m"}, corev1.ResourceMemory: {"16Mi", "64Mi"}}
	shapes := shadowShapes()
	kept := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	shapes["kept"] = testPod("science", "kept", withPorts("8080"),
		withContainer(corev1.Container{Name: "cache", Image: "redis", Resources: kept}),
		withAnnotation(annotations.DisableOffloadContainers, "cache"))
	for name, pod := range shapes {
		t.Run(name, func(t *testing.T) {
			objs, err := testSpec().Build(pod)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			for _, c := range objs.Deployment.Spec.Template.Spec.Containers {
				want := tunnel
				switch c.Name {
				case ContainerHold:
					want = hold
				case ContainerForward, ContainerReverse:
				default:
					if !equalResources(c.Resources, kept) {
						t.Errorf("kept container %s resources %v; want its own %v", c.Name, c.Resources, kept)
					}
					continue
				}
				for res, rl := range want {
					req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
					if req.Cmp(resource.MustParse(rl[0])) != 0 || lim.Cmp(resource.MustParse(rl[1])) != 0 {
						t.Errorf("%s %s request %s limit %s; want %s, %s", c.Name, res, req.String(), lim.String(), rl[0], rl[1])
					}
				}
				if len(c.Resources.Requests) != 2 || len(c.Resources.Limits) != 2 {
					t.Errorf("%s resources %v; want cpu and memory only", c.Name, c.Resources)
				}
			}
		})
	}
}

func equalResources(a, b corev1.ResourceRequirements) bool {
	if len(a.Requests) != len(b.Requests) || len(a.Limits) != len(b.Limits) {
		return false
	}
	for _, l := range [][2]corev1.ResourceList{{a.Requests, b.Requests}, {a.Limits, b.Limits}} {
		for k, v := range l[0] {
			if w, ok := l[1][k]; !ok || v.Cmp(w) != 0 {
				return false
			}
		}
	}
	return true
}
