package provider

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonDaemonSetPod is the status reason, and the Event reason, of a pod
// of a DaemonSet bound to the node: sluice never runs it.
const ReasonDaemonSetPod = "SluiceDaemonSetPod"

// daemonSetOwner returns the owner reference of kind DaemonSet of pod, or
// nil. Any API group counts: apps/v1's, and the DaemonSets of other
// controllers (OpenKruise's Advanced DaemonSet) that put a pod on every
// node the same way.
func daemonSetOwner(pod *corev1.Pod) *metav1.OwnerReference {
	for i, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return &pod.OwnerReferences[i]
		}
	}
	return nil
}

// parkDaemonSetPod keeps a DaemonSet's pod Pending on the node for good,
// never submitted: node agents (log shippers, CNI, exporters) have no
// meaning on a Slurm site, and many DaemonSets tolerate every taint, so
// the taint does not keep them off.
//
// The pod is not failed, which would make it churn: the DaemonSet
// controller deletes a failed daemon pod and makes a new one, with a
// backoff of up to 15 minutes, forever, each time with Events and a Slurm
// look-up. Pending, the controller leaves it alone (it counts it
// unavailable), no job is submitted, and the reason says once, in the
// status and one Warning Event, why and how to keep the DaemonSet off
// (the node's label type=virtual-kubelet). told reports that the pod
// already carried this reason (sluice-vk restarted or a standby took
// over): the Event is not repeated.
func (p *Provider) parkDaemonSetPod(st *podState, owner *metav1.OwnerReference, told bool) {
	msg := fmt.Sprintf("not run: pod of DaemonSet %s; node %s runs no DaemonSet pods (they stay Pending, no Slurm job); keep the DaemonSet off with a node affinity: type NotIn [virtual-kubelet]",
		owner.Name, p.cfg.NodeName)
	p.mu.Lock()
	s := waitingStatus(st.pod, st.pod.Status, ReasonDaemonSetPod, msg)
	s.Phase = corev1.PodPending
	s.Reason = ReasonDaemonSetPod
	s.Message = msg
	s.Conditions = conditions(s.Conditions, p.cfg.Now(), true, false, false, ReasonDaemonSetPod)
	st.pod.Status = s
	// final: nothing to poll, nothing to submit; a deletion only reports
	// the containers terminated
	st.final = true
	pod := st.pod.DeepCopy()
	p.mu.Unlock()
	if !told {
		p.metrics.refused(ReasonDaemonSetPod)
		p.event(pod, corev1.EventTypeWarning, ReasonDaemonSetPod, "%s", msg)
		p.log.Warn("provider: DaemonSet pod not run", "pod", keyOf(pod), "uid", pod.UID, "daemonset", owner.Name)
	}
	p.push(st)
}
