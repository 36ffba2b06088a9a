package provider

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
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

// EventKilling tells that a container's liveness or startup probe, or
// its postStart hook, killed it; EventFailedPostStartHook that the hook
// failed.
const (
	EventKilling             = "Killing"
	EventFailedPostStartHook = "FailedPostStartHook"
)

// restartEvents tells, as the kubelet does, each new kill of a container
// by its probes or postStart hook between two job statuses: the probe's
// Unhealthy Warning (or FailedPostStartHook), then Killing, which says
// whether the container runs again (its job counted a restart) or not
// (its job wrote what killed it for good).
func (p *Provider) restartEvents(pod *corev1.Pod, prev, cur slurm.Status) {
	for _, name := range slices.Sorted(maps.Keys(cur.Containers)) {
		c, was := cur.Containers[name], prev.Containers[name]
		if n := c.RestartCount - was.RestartCount; n > 0 && c.LastTermination != nil {
			times := ""
			if n > 1 {
				times = fmt.Sprintf(" (%d times since the last status)", n)
			}
			p.killEvents(pod, name, c.LastTermination.Reason, times, ", will be restarted")
		}
		if c.KilledBy != "" && was.KilledBy == "" {
			p.killEvents(pod, name, c.KilledBy, "", "")
		}
	}
}

// killEvents tells that container name was killed for reason.
func (p *Provider) killEvents(pod *corev1.Pod, name string, reason slurm.KillReason, times, then string) {
	switch reason {
	case slurm.KilledByLiveness:
		p.event(pod, corev1.EventTypeWarning, EventUnhealthy, "Liveness probe of container %s failed%s", name, times)
		p.event(pod, corev1.EventTypeNormal, EventKilling, "Container %s failed liveness probe%s", name, then)
	case slurm.KilledByStartup:
		p.event(pod, corev1.EventTypeWarning, EventUnhealthy, "Startup probe of container %s failed%s", name, times)
		p.event(pod, corev1.EventTypeNormal, EventKilling, "Container %s failed startup probe%s", name, then)
	case slurm.KilledByPostStart:
		p.event(pod, corev1.EventTypeWarning, EventFailedPostStartHook, "PostStartHook of container %s failed%s", name, times)
		p.event(pod, corev1.EventTypeNormal, EventKilling, "Container %s failed its postStart hook%s", name, then)
	}
}

// preStopGrace is the time a job whose containers have preStop hooks is
// given to run them when its pod is deleted (the pod's grace period, and
// a little for the script to end); zero for a job without hooks, or one
// adopted after a restart, whose containers are not known.
func preStopGrace(pod *corev1.Pod, containers []jobscript.Container) time.Duration {
	for _, c := range containers {
		if c.PreStop != nil {
			return time.Duration(jobscript.PreStopGrace(pod))*time.Second + preStopSlack
		}
	}
	return 0
}

// preStopSlack is the time a batch script is given, past its hooks'
// grace period, to stop its containers and end.
const preStopSlack = 5 * time.Second
