package shadow

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Paths of sluice-tunnel's metrics server that the probes ask.
const (
	pathHealthz = "/healthz"
	pathReadyz  = "/readyz"
)

// livenessProbe asks a tunnel's metrics server on port whether the process
// serves. It does not fail while the site is down: the tunnel retries, and
// a restart would not help. Three failures 10 s apart restart it.
//
// The metrics server listens on the pod's IP ($(POD_IP):port), which is
// where the kubelet's httpGet probes connect (no host set).
func livenessProbe(port int32) *corev1.Probe {
	return httpProbe(pathHealthz, port, 10, 5, 3)
}

// readinessProbe asks a tunnel's metrics server on port whether the tunnel
// is up (state up in /status). Only the forward tunnel has one: the shadow
// Service sends connections to Ready pods only, and a forward tunnel that
// is not up cannot carry them; it connects as soon as the job's node is
// known. The reverse tunnel carries no connection of the Service, so it has
// none: its state would only take the kept containers' ports, and the
// forward's, out of the Service while the job's connections to the cluster
// are being made again. A shadow with only a reverse tunnel or kept
// containers is thus Ready once its containers run, as a pod without
// probes is. The virtual kubelet reads the tunnels' state from /status of
// running containers, whether Ready or not. Two failures 3 s apart take
// the pod out of the Service; one success brings it back.
func readinessProbe(port int32) *corev1.Probe {
	return httpProbe(pathReadyz, port, 3, 2, 2)
}

// httpProbe gets path on port every period seconds, each within timeout
// seconds, and fails after failures failures in a row.
func httpProbe(path string, port, period, timeout, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
		PeriodSeconds:    period,
		TimeoutSeconds:   timeout,
		FailureThreshold: failures,
	}
}
