package slurm

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonProbesNotRun is the Warning of a pod whose probes or lifecycle
// hooks the job does not run.
const ReasonProbesNotRun = "ProbesNotRun"

// probes adds the readiness probe and the preStop hook of the pod's
// container c (at field) to jc when the site runs probes
// (SiteOptions.Probes), and says in a Warning what of c's probes and hooks
// the job leaves out: all of them when the site does not run probes;
// liveness and startup probes and postStart hooks, not run yet; a probe or
// hook of a kind the node cannot run. A container
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
		switch h, err := newHook(l.PreStop, c, PreStopGrace(b.pod)); {
		case !b.site.Probes:
			left = append(left, "lifecycle.preStop")
		case err != nil:
			left = append(left, fmt.Sprintf("lifecycle.preStop (%v)", err))
		default:
			jc.PreStop = h
		}
	}
	if len(left) == 0 {
		return
	}
	why := "sluice runs readiness probes and preStop hooks only, and only when the site sets Site.EnableProbes"
	if b.site.Probes {
		why = "sluice runs readiness probes (exec, httpGet, tcpSocket) and preStop hooks (exec, httpGet) only"
	}
	b.job.Warnings = append(b.job.Warnings, Warning{ReasonProbesNotRun, fmt.Sprintf(
		"%s: not run: %s; %s (container %s counts as ready while it runs unless its readiness probe is run)",
		field, strings.Join(left, ", "), why, c.Name)})
}

// Bounds of the time a preStop hook is given: the pod's
// terminationGracePeriodSeconds, 30 s by default as in Kubernetes.
const (
	defaultGrace = 30
	maxGrace     = 3600
)

// PreStopGrace is the time, in seconds, the preStop hooks of pod's
// containers are given before their containers are stopped.
func PreStopGrace(pod *corev1.Pod) int32 {
	g := int64(defaultGrace)
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		g = min(max(*s, 1), maxGrace)
	}
	return int32(g)
}

// newHook turns a lifecycle handler of container c into a check the batch
// script runs (as a probe's, once) within grace seconds.
func newHook(h *corev1.LifecycleHandler, c *corev1.Container, grace int32) (*Probe, error) {
	switch {
	case h.Exec != nil:
		p, err := newProbe(&corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: h.Exec}, TimeoutSeconds: grace}, c)
		return p, err
	case h.HTTPGet != nil:
		p, err := newProbe(&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: h.HTTPGet}, TimeoutSeconds: grace}, c)
		return p, err
	case h.Sleep != nil:
		return nil, errors.New("sleep hooks are not supported")
	case h.TCPSocket != nil:
		return nil, errors.New("tcpSocket hooks are deprecated and not supported")
	}
	return nil, errors.New("a hook with no handler")
}
