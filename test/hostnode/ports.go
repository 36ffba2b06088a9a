package hostnode

import (
	"net"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// targetPort is the port on pod that a Service port forwards to: its
// numeric targetPort (the Service port itself when unset), or the TCP
// containerPort of the pod named by targetPort. It reports false when the
// pod has no port of that name.
func targetPort(sp corev1.ServicePort, pod *corev1.Pod) (int32, bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.Int {
		if tp.IntVal == 0 {
			return sp.Port, true
		}
		return tp.IntVal, true
	}
	if tp.StrVal == "" {
		return sp.Port, true
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == tp.StrVal && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// readyBackends lists ip:port of the pods a Service port forwards to: the
// ready pods, not being deleted, whose IP is a host node's (127.80.0.0/16,
// so on this machine whichever host node runs them), at their target port.
func readyBackends(pods []*corev1.Pod, sp corev1.ServicePort) []string {
	var out []string
	for _, pod := range pods {
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || !podIPPrefix.Contains(ip) || pod.DeletionTimestamp != nil || !hasReadyCondition(pod) {
			continue
		}
		if port, ok := targetPort(sp, pod); ok {
			out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(int(port))))
		}
	}
	return out
}

func hasReadyCondition(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
