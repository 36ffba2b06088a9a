package provider

import (
	"maps"
	"slices"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// EventUnhealthy is the Warning of a container whose readiness probe, run
// in its job, failed after it had passed; EventProbeReady the Normal Event
// of one whose probe passes, first or again; EventPreStop tells that a
// deleted pod's job runs its preStop hooks.
const (
	EventUnhealthy  = "Unhealthy"
	EventProbeReady = "ProbeReady"
	EventPreStop    = "PreStopHook"
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

// preStopGrace is the time a job whose containers have preStop hooks is
// given to run them when its pod is deleted (the pod's grace period, and
// a little for the script to end); zero for a job without hooks, or one
// adopted after a restart, whose containers are not known.
func preStopGrace(pod *corev1.Pod, containers []slurm.Container) time.Duration {
	for _, c := range containers {
		if c.PreStop != nil {
			return time.Duration(slurm.PreStopGrace(pod))*time.Second + preStopSlack
		}
	}
	return 0
}

// preStopSlack is the time a batch script is given, past its hooks'
// grace period, to stop its containers and end.
const preStopSlack = 5 * time.Second
