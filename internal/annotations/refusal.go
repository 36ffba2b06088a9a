package annotations

import (
	"fmt"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/textcut"
)

// Reason says why a pod is refused. Its values are CamelCase words that the
// virtual kubelet can use as the pod's status reason, as an Event reason and
// as a metric label.
type Reason string

// Reasons of a *Refusal. The first five come from Parse, the others from
// Check.
const (
	// ReasonMalformed: an entry or value does not follow the syntax.
	ReasonMalformed Reason = "ReverseAnnotationMalformed"
	// ReasonPortRepeats: two forwards listen on the same port.
	ReasonPortRepeats Reason = "ReversePortRepeats"
	// ReasonSocksCollides: the SOCKS port is also a forward's listen port.
	ReasonSocksCollides Reason = "ReverseSocksPortCollides"
	// ReasonBadBind: reverse-bind is not, after parsing, a loopback address
	// a relay may hold (127.1.0.0-127.255.255.254).
	ReasonBadBind Reason = "ReverseBindInvalid"
	// ReasonTooManyForwards: more than MaxForwards forwards.
	ReasonTooManyForwards Reason = "ReverseTooManyForwards"

	// ReasonNotEnabled: Network.SSH.Reverse.Enabled is off.
	ReasonNotEnabled Reason = "ReverseNotEnabled"
	// ReasonShadowMode: Network.ShadowMode is not ssh.
	ReasonShadowMode Reason = "ReverseNeedsSSHShadow"
	// ReasonTunnelDisabled: Network.EnableTunnel is off.
	ReasonTunnelDisabled Reason = "ReverseTunnelDisabled"
	// ReasonPodVPN: the pod also sets interlink.eu/pod-vpn, which disables
	// the shadow that carries the tunnel.
	ReasonPodVPN Reason = "ReverseWithPodVPN"
	// ReasonSocksNotAllowed: SOCKS asked for without Reverse.AllowSocks.
	ReasonSocksNotAllowed Reason = "ReverseSocksNotAllowed"

	// ReasonRenewal: sluice.io/renew-before is malformed or cannot work
	// for the pod (CheckRenewal).
	ReasonRenewal Reason = "RenewalRefused"
)

// Refusal reports a pod that must be refused at creation (S6) rather than
// run without what it asked for. Retrying does not help; the pod should fail
// with Reason as its reason and Error() as its message.
type Refusal struct {
	Reason Reason
	// Annotation is the annotation at fault.
	Annotation string
	// Entry is the offending entry of a list annotation, truncated to
	// maxQuoted bytes; empty when the rule is about the whole annotation.
	Entry string
	// Rule is the rule broken, in words.
	Rule string
}

func (r *Refusal) Error() string {
	if r.Entry != "" {
		return r.Annotation + ": entry " + strconv.Quote(r.Entry) + ": " + r.Rule
	}
	return r.Annotation + ": " + r.Rule
}

// maxQuoted bounds the part of a pod's value that goes into a message, so
// that a huge annotation cannot make a huge Event.
const maxQuoted = 96

// truncate cuts s to maxQuoted bytes on a character boundary, marking the
// cut.
func truncate(s string) string { return textcut.Cut(s, maxQuoted, "...") }

// quoted is truncate and strconv.Quote, for values inside a Rule.
func quoted(s string) string { return strconv.Quote(truncate(s)) }

func refuse(reason Reason, annotation, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Annotation: annotation, Rule: fmt.Sprintf(format, args...)}
}

func refuseEntry(reason Reason, annotation, entry, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Annotation: annotation, Entry: truncate(entry), Rule: fmt.Sprintf(format, args...)}
}
