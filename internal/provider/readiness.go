package provider

import (
	"maps"
	"slices"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// EventUnhealthy is the Warning of a container whose readiness probe, run
// in its job, failed after it had passed; EventProbeReady the Normal Event
// of one whose probe passes, first or again.
const (
	EventUnhealthy  = "Unhealthy"
	EventProbeReady = "ProbeReady"
)

// readinessEvents tells the changes of the containers' readiness probes
// between two job statuses.
func (p *Provider) readinessEvents(pod *corev1.Pod, prev, cur slurm.Status) {
	for _, name := range slices.Sorted(maps.Keys(cur.Containers)) {
		now := cur.Containers[name].Ready
		if now == nil {
			continue
		}
		was := prev.Containers[name].Ready
		switch {
		case *now && (was == nil || !*was):
			p.event(pod, corev1.EventTypeNormal, EventProbeReady, "Readiness probe of container %s passed: the container is ready", name)
		case !*now && was != nil && *was:
			p.event(pod, corev1.EventTypeWarning, EventUnhealthy, "Readiness probe of container %s failed: the container is not ready", name)
		}
	}
}
