package krb

import (
	"errors"
	"fmt"
	"strings"
)

// Reason says why a ticket could not be got, in words an operator acts on.
type Reason string

const (
	ReasonClockSkew      Reason = "ClockSkew"
	ReasonWrongPrincipal Reason = "WrongPrincipal"
	ReasonWrongKey       Reason = "WrongKey"
	ReasonKDCUnreachable Reason = "KDCUnreachable"
	ReasonOther          Reason = "KerberosError"
)

// Error is a failure to get or use a ticket, with its Reason.
type Error struct {
	Op     string
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("krb: %s: %s: %v", e.Op, e.hint(), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) hint() string {
	switch e.Reason {
	case ReasonClockSkew:
		return "clock skew with the KDC or server (check the time on both sides)"
	case ReasonWrongPrincipal:
		return "principal unknown to the KDC (check Principal and the realm)"
	case ReasonWrongKey:
		return "the keytab holds no key of the principal that the KDC accepts (check the keytab and Principal)"
	case ReasonKDCUnreachable:
		return "KDC unreachable (check the KDC address and the network)"
	}
	return "kerberos error"
}

// ReasonOf returns the Reason of err, or "" if err is not an *Error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// classify wraps err, from gokrb5 or a KDC, with the reason its text names.
// gokrb5 flattens its errors into text, so the text is what there is.
func classify(op string, err error) error {
	s := err.Error()
	r := ReasonOther
	switch {
	case strings.Contains(s, "KRB_AP_ERR_SKEW"):
		r = ReasonClockSkew
	case strings.Contains(s, "KDC_ERR_C_PRINCIPAL_UNKNOWN"), strings.Contains(s, "KDC_ERR_S_PRINCIPAL_UNKNOWN"):
		r = ReasonWrongPrincipal
	case strings.Contains(s, "KDC_ERR_PREAUTH_FAILED"), strings.Contains(s, "KRB_AP_ERR_BAD_INTEGRITY"),
		strings.Contains(s, "Decrypting_Error"), strings.Contains(s, "keytab incorrect"),
		strings.Contains(s, "matching key not found in keytab"):
		r = ReasonWrongKey
	case strings.Contains(s, "Networking_Error"), strings.Contains(s, "failed to communicate with KDC"):
		r = ReasonKDCUnreachable
	}
	return &Error{Op: op, Reason: r, Err: err}
}
