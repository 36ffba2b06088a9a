package shadow

import (
	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// AnnotationRelayed marks the pod template of a shadow Deployment whose
// pod's job runs the relay (RunsRelay), so that the gateway, which reads
// the Deployment, reaches the job's ports through the relay's forward
// entry. It is part of the Deployment's spec, and so of its stamp.
const AnnotationRelayed = "sluice.io/relayed"

// RunsRelay is the one rule of which jobs run sluice-relay: a pod with
// reverse forwards, whose job reaches the cluster through the relay, and,
// on a node whose forward tunnels go through the relay (entries: the
// tunnels are on and the site has a Site.SocketDirRoot, where the entry
// lives), a pod whose forward tunnel carries ports to the job (Needed's
// forward), whose relay serves the forward entry fwd.sock. The shadow's
// forward (direct or through the gateway), kubectl port-forward and the
// probes then reach only a listener of the job's user, never another
// user's on the node. Without entries a forward tunnel reaches whoever
// listens on the node's 127.0.0.1 at the port. A pod that gets no shadow
// (interlink.eu/pod-vpn) has no tunnel and no relay.
func RunsRelay(pod *corev1.Pod, entries bool) bool {
	if annotations.HasPodVPN(pod.Annotations) {
		return false
	}
	if r, err := annotations.Parse(pod.Annotations, pod.Namespace); err == nil && r != nil && len(r.Forwards) > 0 {
		return true
	}
	forward, _ := Needed(pod)
	return forward && entries
}
