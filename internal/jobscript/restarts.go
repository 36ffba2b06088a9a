package jobscript

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// RestartPolicy is what becomes of a container that its liveness or
// startup probe, or its postStart hook, killed: the pod's restartPolicy.
type RestartPolicy string

// The restart policies, as Kubernetes names them.
const (
	RestartAlways    RestartPolicy = "Always"    // run it again
	RestartOnFailure RestartPolicy = "OnFailure" // run it again unless it exited 0
	RestartNever     RestartPolicy = "Never"     // it ends with its exit code
)

// restartPolicy is pod's restartPolicy; Always, as in Kubernetes, when
// unset or unknown.
func restartPolicy(pod *corev1.Pod) RestartPolicy {
	switch p := RestartPolicy(pod.Spec.RestartPolicy); p {
	case RestartOnFailure, RestartNever:
		return p
	}
	return RestartAlways
}

// checkRestart checks the restart policy and grace period of a job with a
// container its probes can kill; they reach the script as they are.
func checkRestart(job *Job) error {
	kept := false
	for i := range job.Containers {
		kept = kept || job.Containers[i].kept()
	}
	if !kept {
		return nil
	}
	switch job.Restart {
	case RestartAlways, RestartOnFailure, RestartNever:
	default:
		return fmt.Errorf("restart policy %q is none of Always, OnFailure, Never", job.Restart)
	}
	if job.Grace < 1 || job.Grace > maxGrace {
		return fmt.Errorf("grace period %d out of range", job.Grace)
	}
	return nil
}

// checkProbes checks a container's probes and hooks. (An init container
// has none in Kubernetes; the script runs none of an init container's.)
func (c *Container) checkProbes() error {
	for _, p := range []struct {
		what  string
		probe *Probe
	}{
		{"readiness probe", c.Readiness}, {"liveness probe", c.Liveness}, {"startup probe", c.Startup},
		{"postStart hook", c.PostStart}, {"preStop hook", c.PreStop},
	} {
		if err := p.probe.check(); err != nil {
			return fmt.Errorf("%s: %w", p.what, err)
		}
	}
	return nil
}
