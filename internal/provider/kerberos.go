package provider

import "github.com/sluice-hpc/sluice/internal/krb"

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
