package hostnode

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podView is what a pod's status is made of.
type podView struct {
	PodIP, HostIP netip.Addr
	StartTime     *metav1.Time
	// Sandbox: the pod has its address and directory.
	Sandbox bool
	// Failure, if set, fails the pod: the node cannot run it.
	Failure *podFailure
	// MountErr is the last failure to write the volumes, while it lasts.
	MountErr string
	// InitDone: the init containers all succeeded (or there are none).
	InitDone bool
	// Deleting: the pod is being stopped.
	Deleting    bool
	Inits, Ctrs []containerView
}

// buildPodStatus is the status of pod as v shows it. Conditions keep their
// transition time from prev while their status stays.
func buildPodStatus(pod *corev1.Pod, v podView, prev []corev1.PodCondition, now metav1.Time) corev1.PodStatus {
	st := corev1.PodStatus{
		Phase:     podPhase(pod.Spec.RestartPolicy, v),
		StartTime: v.StartTime,
		QOSClass:  pod.Status.QOSClass,
	}
	if v.Failure != nil {
		st.Reason, st.Message = v.Failure.Reason, v.Failure.Message
	}
	if v.HostIP.IsValid() {
		st.HostIP = v.HostIP.String()
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	}
	if v.PodIP.IsValid() {
		st.PodIP = v.PodIP.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	for i, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(c, viewAt(v.Inits, i), v, "PodInitializing"))
	}
	waitReason := "ContainerCreating"
	if !v.InitDone {
		waitReason = "PodInitializing"
	}
	for i, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(c, viewAt(v.Ctrs, i), v, waitReason))
	}

	ready := podReady(v)
	cond := func(t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s, reason = corev1.ConditionTrue, ""
		}
		c := corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now}
		for _, p := range prev {
			if p.Type == t && p.Status == s {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		return c
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			st.Conditions = append(st.Conditions, c)
		}
	}
	st.Conditions = append(st.Conditions,
		cond(corev1.PodReadyToStartContainers, v.Sandbox, ""),
		cond(corev1.PodInitialized, v.InitDone, "ContainersNotInitialized"),
		cond(corev1.ContainersReady, ready, "ContainersNotReady"),
		cond(corev1.PodReady, ready, "ContainersNotReady"),
	)
	return st
}

func viewAt(vs []containerView, i int) containerView {
	if i < len(vs) {
		return vs[i]
	}
	return containerView{}
}

// containerStatus is one container's status; a container that never
// started waits for waitReason (or for its volumes).
func containerStatus(c corev1.Container, cv containerView, v podView, waitReason string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: cv.ImageID, ContainerID: cv.ContainerID, RestartCount: cv.Restarts,
		State: cv.State, LastTerminationState: cv.Last,
	}
	running := cv.State.Running != nil
	cs.Started = &running
	cs.Ready = running && !v.Deleting
	if cv.State.Running == nil && cv.State.Waiting == nil && cv.State.Terminated == nil {
		w := &corev1.ContainerStateWaiting{Reason: waitReason}
		if v.MountErr != "" {
			w.Reason, w.Message = "ContainerCreating", v.MountErr
		}
		if v.Failure != nil {
			w.Reason, w.Message = "CreateContainerConfigError", v.Failure.Message
		}
		cs.State = corev1.ContainerState{Waiting: w}
	}
	return cs
}

// podReady: every container runs and the pod is not being stopped.
func podReady(v podView) bool {
	if v.Failure != nil || v.Deleting || !v.InitDone || len(v.Ctrs) == 0 {
		return false
	}
	for _, c := range v.Ctrs {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// podPhase is the pod's phase, as a kubelet computes it: Pending until
// every container started, Running while one runs or is to restart,
// Succeeded or Failed once all have ended for good.
func podPhase(policy corev1.RestartPolicy, v podView) corev1.PodPhase {
	if v.Failure != nil {
		return corev1.PodFailed
	}
	if !v.InitDone && !v.Deleting {
		for _, c := range v.Inits {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 && policy == corev1.RestartPolicyNever {
				return corev1.PodFailed
			}
		}
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range v.Ctrs {
		switch s := c.State; {
		case s.Running != nil:
			running++
		case s.Terminated != nil:
			stopped++
			if s.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.Last.Terminated != nil: // waiting to restart
			stopped++
			if c.Last.Terminated.ExitCode == 0 {
				succeeded++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0 && !v.Deleting:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case waiting > 0: // deleted before they started
		return corev1.PodFailed
	case v.Deleting:
		if succeeded == stopped {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case policy == corev1.RestartPolicyAlways:
		return corev1.PodRunning
	case succeeded == stopped:
		return corev1.PodSucceeded
	case policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	}
	return corev1.PodRunning
}
