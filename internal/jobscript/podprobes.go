package jobscript

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonProbesNotRun is the Warning of a pod whose probes or lifecycle
// hooks the job does not run.
const ReasonProbesNotRun = "ProbesNotRun"

// probes adds the probes and lifecycle hooks of the pod's container c (at
// field) to jc when the site runs probes (SiteOptions.Probes), and says in
// a Warning what of them the job leaves out: all of them when the site
// does not run probes; a probe or hook of a kind the node cannot run
// (grpc probes, sleep and tcpSocket hooks). A container whose readiness
// probe is not run counts as ready while it runs.
func (b *podBuilder) probes(c *corev1.Container, field string, jc *Container) {
	var left []string
	for _, k := range []struct {
		name  string
		probe *corev1.Probe
		dst   **Probe
	}{
		{"readinessProbe", c.ReadinessProbe, &jc.Readiness},
		{"livenessProbe", c.LivenessProbe, &jc.Liveness},
		{"startupProbe", c.StartupProbe, &jc.Startup},
	} {
		if k.probe == nil {
			continue
		}
		switch p, err := newProbe(k.probe, c); {
		case !b.site.Probes:
			left = append(left, k.name)
		case err != nil:
			left = append(left, fmt.Sprintf("%s (%v)", k.name, err))
		default:
			*k.dst = p
		}
	}
	l := c.Lifecycle
	if l == nil {
		l = &corev1.Lifecycle{}
	}
	for _, k := range []struct {
		name    string
		handler *corev1.LifecycleHandler
		dst     **Probe
	}{
		{"lifecycle.postStart", l.PostStart, &jc.PostStart},
		{"lifecycle.preStop", l.PreStop, &jc.PreStop},
	} {
		if k.handler == nil {
			continue
		}
		switch h, err := newHook(k.handler, c, PreStopGrace(b.pod)); {
		case !b.site.Probes:
			left = append(left, k.name)
		case err != nil:
			left = append(left, fmt.Sprintf("%s (%v)", k.name, err))
		default:
			*k.dst = h
		}
	}
	if jc.kept() {
		b.job.Restart, b.job.Grace = restartPolicy(b.pod), PreStopGrace(b.pod)
	}
	if len(left) == 0 {
		return
	}
	why := "sluice runs probes and lifecycle hooks only when the site sets Site.EnableProbes"
	if b.site.Probes {
		why = "sluice runs readiness, liveness and startup probes (exec, httpGet, tcpSocket) and postStart and preStop hooks (exec, httpGet) only"
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
