package provider

import (
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConditionSSHCertificate tells whether the SSH user certificate the
// virtual kubelet logs in with is valid and not about to expire.
const ConditionSSHCertificate corev1.NodeConditionType = "SSHCertificateValid"

// Reasons of ConditionSSHCertificate.
const (
	ReasonCertificateValid       = "CertificateValid"
	ReasonCertificateExpiresSoon = "CertificateExpiresSoon"
	ReasonCertificateNotValid    = "CertificateNotValid"
)

// CertificateCheck says, at now, whether the SSH user certificate is valid
// (ok), and if not or if it expires soon, why (reason
// ReasonCertificateExpiresSoon or ReasonCertificateNotValid, and a message
// naming the file and its validity window).
type CertificateCheck func(now time.Time) (ok bool, reason, msg string)

// certWarning is a Warning Event to send about the certificate.
type certWarning struct{ node, reason, msg string }

// checkCertificate sets ConditionSSHCertificate, with s.mu held. It reports
// whether the condition changed and, when it turned False, the Warning to
// send.
func (s *NodeStatus) checkCertificate(now time.Time) (bool, *certWarning) {
	if s.Certificate == nil {
		return false, nil
	}
	ok, reason, msg := s.Certificate(now)
	status := corev1.ConditionTrue
	if !ok || reason != ReasonCertificateValid {
		status = corev1.ConditionFalse
	}
	if !setNodeCondition(s.Node, ConditionSSHCertificate, status, reason, msg, now) {
		return false, nil
	}
	if status == corev1.ConditionTrue {
		return true, nil
	}
	return true, &certWarning{s.Node.Name, reason, msg}
}

func (s *NodeStatus) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// warnCertificate logs w and sends it as a Warning Event on the node.
func (s *NodeStatus) warnCertificate(w *certWarning) {
	s.logger().Warn("provider: ssh certificate", "reason", w.reason, "message", w.msg)
	if s.Recorder == nil {
		return
	}
	// As the kubelet does, the node's Events carry its name as UID.
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: w.node, UID: types.UID(w.node)}
	s.Recorder.Event(ref, corev1.EventTypeWarning, w.reason, w.msg)
}
