package provider

import (
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
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

// maxAnnotationWarnings bounds the Events of one pod's unimplemented
// annotations; one more Event counts the rest. The event broadcaster lets
// 25 Events of one pod through at once, then one in 5 minutes: a pod with
// many annotations must not take the place of its job's own Events.
const maxAnnotationWarnings = 8

// warnUnimplemented records a Warning Event for each annotation of
// interLink's that the pod sets and sluice does not implement, saying what
// sluice does instead, and for each it writes under the legacy prefix,
// saying how it is read, so that none is ignored silently (S12). Past
// maxAnnotationWarnings, one Event names how many more there are.
func (p *Provider) warnUnimplemented(pod *corev1.Pod) {
	ws := annotations.Warnings(pod.Annotations)
	for i, w := range ws {
		if i == maxAnnotationWarnings {
			p.event(pod, corev1.EventTypeWarning, w.Reason,
				"%d more annotations under %s are not implemented or are written under the legacy prefix, from %s on", len(ws)-i, strings.Join(annotations.Prefixes, ", "), w.Annotation)
			break
		}
		p.event(pod, corev1.EventTypeWarning, w.Reason, "%s", w.Message)
	}
	if len(ws) > 0 {
		names := make([]string, len(ws))
		for i, w := range ws {
			names[i] = w.Annotation
		}
		p.log.Warn("provider: annotations not implemented or under the legacy prefix", "pod", keyOf(pod), "uid", pod.UID, "annotations", names)
	}
}

// warnJob records a Warning Event for each thing the pod's job was made
// without (a flavor the site lacks, no flavor for its GPU count).
func (p *Provider) warnJob(pod *corev1.Pod, ws []jobscript.Warning) {
	for _, w := range ws {
		p.event(pod, corev1.EventTypeWarning, w.Reason, "%s", w.Message)
	}
}
