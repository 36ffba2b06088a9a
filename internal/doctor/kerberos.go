package doctor

import (
	"fmt"
	"net"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/krb"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// kerberosAccess is loginAccess with Network.SSH.Auth kerberos: the
// certificate line says none applies, the kerberos line whether a ticket
// comes from the keytab (and until when), and the login then offers
// gssapi-with-mic as sluice-vk does, delegating on the login hop only with
// Reverse.NodeExec srun.
func kerberosAccess(r *Report, a *access, h config.SSH, hostErr error) *access {
	r.add(Check{Name: "certificate", Status: OK, Found: "none (Network.SSH.Auth kerberos)"})
	src, err := site.KerberosSource(h)
	var tgt krb.Credential
	if err == nil {
		tgt, err = src.TGT()
	}
	r.add(kerberosCheck(h, tgt, err))
	if err != nil {
		r.add(Check{Name: "login", Status: Skip, Found: "not tried: no Kerberos ticket"})
		r.add(Check{Name: "auth", Status: Skip, Found: "not tried: no Kerberos ticket"})
		return nil
	}
	if hostErr != nil {
		r.add(Check{Name: "login", Status: Fail, Found: "Network.SSH.KnownHostsFile: " + hostErr.Error(),
			Fix: "pin the login node's host key in " + h.KnownHostsFile + " (ssh-keyscan it from a trusted network and compare the fingerprint with the site's)"})
		r.add(Check{Name: "auth", Status: Skip, Found: "not tried: no pinned login host key"})
		return nil
	}
	delegate := h.Reverse.NodeExec == "srun"
	a.gssapi = func(host string, login bool) ssh.AuthMethod {
		return sshx.KerberosAuth(src, host, login && delegate)
	}
	a.keyDesc = "Kerberos ticket of " + h.Principal
	return a
}

// kerberosCheck decides the kerberos line: a ticket got from the keytab,
// or why not, in the words of krb.Reason.
func kerberosCheck(h config.SSH, tgt krb.Credential, err error) Check {
	c := Check{Name: "kerberos"}
	if err != nil {
		c.Status, c.Found = Fail, err.Error()
		switch krb.ReasonOf(err) {
		case krb.ReasonClockSkew:
			c.Fix = "synchronise this host's clock with the KDC's (NTP)"
		case krb.ReasonWrongPrincipal:
			c.Fix = "check Network.SSH.Principal (" + h.Principal + ") against the realm's principals"
		case krb.ReasonWrongKey:
			c.Fix = "export the principal's keytab again (its key changed): " + h.KeytabFile
		case krb.ReasonKDCUnreachable:
			c.Fix = "check Network.SSH.Krb5ConfFile or Realm and KDCs, and that this host reaches the KDC on port 88"
		default:
			c.Fix = "check Network.SSH.KeytabFile, Principal and the Kerberos configuration (kinit -kt KEYTAB PRINCIPAL by hand)"
		}
		return c
	}
	c.Status = OK
	c.Found = fmt.Sprintf("a ticket for %s from %s, valid until %s", h.Principal, h.KeytabFile,
		tgt.Part.EndTime.UTC().Format(time.RFC3339))
	return c
}

// loginAuth is what the login hop offers: the key (or certificate), or
// gssapi-with-mic for the login node.
func (a *access) loginAuth() []ssh.AuthMethod {
	if a.gssapi != nil {
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil {
			host = a.addr
		}
		return []ssh.AuthMethod{a.gssapi(host, true)}
	}
	return a.auth
}
