package provider

import (
	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// Reasons of the Events the provider records on pods.
const (
	EventSubmitted     = "Submitted"
	EventAdopted       = "Adopted"
	EventShadowCreated = "ShadowCreated"
	EventRunning       = "Running"
	EventRequeued      = "Requeued"
	EventSucceeded     = "Succeeded"
	EventFailed        = "Failed"
	EventLost          = "JobLost"
	EventCancelled     = "Cancelled"
	EventSubmitWaiting = "SubmitWaiting"
	// EventJobScriptFailed tells why a job failed before its containers
	// started, as its batch script said.
	EventJobScriptFailed = "JobScriptFailed"
	// EventReverseSocksProxy warns that a pod's SOCKS proxy is open to
	// every user of its node (S5).
	EventReverseSocksProxy = "ReverseSocksProxy"
	// ReasonRefused is both the Event reason and the pod status reason of a
	// pod that cannot run (S6).
	ReasonRefused = "SluiceRefused"
)

// event records an Event on pod through the pod controller's recorder.
func (p *Provider) event(pod *corev1.Pod, typ, reason, format string, args ...any) {
	p.cfg.Recorder.Eventf(pod, typ, reason, format, args...)
}

// warnUnimplemented records a Warning Event for each annotation of
// interLink's that the pod sets and sluice does not implement, saying what
// sluice does instead, so that none is ignored silently (S12).
func (p *Provider) warnUnimplemented(pod *corev1.Pod) {
	for _, w := range annotations.Warnings(pod.Annotations) {
		p.event(pod, corev1.EventTypeWarning, annotations.EventNotImplemented, "%s", w.Message)
		p.log.Warn("provider: annotation not implemented", "pod", keyOf(pod), "uid", pod.UID, "annotation", w.Annotation)
	}
}
