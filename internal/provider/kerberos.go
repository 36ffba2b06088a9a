package provider

import (
	"github.com/sluice-hpc/sluice/internal/krb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// unreachableReason is the SiteReachable condition's reason for err: with
// Kerberos, why no ticket could be had (KerberosClockSkew,
// KerberosWrongPrincipal, KerberosWrongKey, KerberosKDCUnreachable,
// KerberosError), else SiteUnreachable.
func unreachableReason(err error) string {
	switch r := krb.ReasonOf(err); r {
	case "":
		return "SiteUnreachable"
	case krb.ReasonOther:
		return string(r)
	default:
		return "Kerberos" + string(r)
	}
}

// warnKerberos records a Warning Event on the node, with the reason
// unreachableReason gives and the error, when the site became unreachable
// for want of a Kerberos ticket.
func (s *NodeStatus) warnKerberos(node string, err error) {
	reason := unreachableReason(err)
	if s.Recorder == nil || krb.ReasonOf(err) == "" {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
	s.Recorder.Event(ref, corev1.EventTypeWarning, reason, err.Error())
}
