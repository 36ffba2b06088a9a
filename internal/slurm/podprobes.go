package slurm

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonProbesNotRun is the Warning of a pod whose probes or lifecycle
// hooks the job does not run.
const ReasonProbesNotRun = "ProbesNotRun"

// probes adds the readiness probe of the pod's container c (at field) to
// jc when the site runs probes (SiteOptions.Probes), and says in a Warning
// what of c's probes and hooks the job leaves out: all of them when the
// site does not run probes; liveness and startup probes and lifecycle hooks,
// not run yet; a readiness probe of a kind the node cannot run. A container
// whose readiness probe is not run counts as ready while it runs.
func (b *podBuilder) probes(c *corev1.Container, field string, jc *Container) {
	var left []string
	if c.ReadinessProbe != nil {
		switch p, err := newProbe(c.ReadinessProbe, c); {
		case !b.site.Probes:
			left = append(left, "readinessProbe")
		case err != nil:
			left = append(left, fmt.Sprintf("readinessProbe (%v)", err))
		default:
			jc.Readiness = p
		}
	}
	if c.LivenessProbe != nil {
		left = append(left, "livenessProbe")
	}
	if c.StartupProbe != nil {
		left = append(left, "startupProbe")
	}
	if l := c.Lifecycle; l != nil && l.PostStart != nil {
		left = append(left, "lifecycle.postStart")
	}
	if l := c.Lifecycle; l != nil && l.PreStop != nil {
		left = append(left, "lifecycle.preStop")
	}
	if len(left) == 0 {
		return
	}
	why := "sluice runs readiness probes only, and only when the site sets Site.EnableProbes"
	if b.site.Probes {
		why = "sluice runs readiness probes (exec, httpGet, tcpSocket) only"
	}
	b.job.Warnings = append(b.job.Warnings, Warning{ReasonProbesNotRun, fmt.Sprintf(
		"%s: not run: %s; %s (container %s counts as ready while it runs unless its readiness probe is run)",
		field, strings.Join(left, ", "), why, c.Name)})
}
