package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// access is how the doctor reaches the login node: what sluice-vk would
// use (site.Open), except that a certificate that is not valid is left out
// so that the other checks still run with the plain key.
type access struct {
	addr      string
	user      string
	auth      []ssh.AuthMethod
	loginKeys ssh.HostKeyCallback
	keyDesc   string // the key offered, for the auth line
	// gssapi is the gssapi-with-mic method of each hop with Kerberos (see
	// tunnel.Hop.GSSAPI); nil with a key.
	gssapi func(host string, login bool) ssh.AuthMethod
	// dialer opens the connection to the login node: through the bastion
	// and the pacing sluice-vk uses (site.Dialer). If nil, a net.Dialer.
	dialer sshx.DialFunc
}

// hostKeySeen wraps a host key callback to remember whether the server got
// as far as showing its key, and what the check said.
type hostKeySeen struct {
	check ssh.HostKeyCallback
	key   ssh.PublicKey
	err   error
}

func (h *hostKeySeen) callback(host string, remote net.Addr, key ssh.PublicKey) error {
	h.key = key
	h.err = h.check(host, remote, key)
	return h.err
}

// dialOutcome classifies a failed SSH connection: the server never showed
// a host key (not reached), showed one that is not pinned, or refused the
// credentials after the host key was accepted.
type dialOutcome int

const (
	dialOK dialOutcome = iota
	dialUnreachable
	dialHostKey
	dialAuth
)

func classifyDial(err error, seen *hostKeySeen) dialOutcome {
	switch {
	case err == nil:
		return dialOK
	case seen.key == nil:
		return dialUnreachable
	case seen.err != nil:
		return dialHostKey
	default:
		return dialAuth
	}
}

// loginAccess reads the key, the certificate and the pinned host keys the
// configuration names. It adds the certificate check to r; a nil access
// means the login node cannot be tried, and the checks say why.
func loginAccess(r *Report, h config.SSH, now time.Time) *access {
	a := &access{addr: net.JoinHostPort(h.LoginHost, strconv.Itoa(h.Port)), user: h.User}
	var hostErr error
	if h.InsecureIgnoreHostKeys {
		a.loginKeys = ssh.InsecureIgnoreHostKey() //nolint:gosec // the site chose it; the login line says so
	} else {
		a.loginKeys, hostErr = sshx.HostKeys(h.KnownHostsFile)
	}
	if h.Auth == "kerberos" {
		return kerberosAccess(r, a, h, hostErr)
	}
	signer, keyErr := sshx.Signer(h.KeyFile)
	r.add(certificateCheck(h, signer, now))
	if hostErr != nil {
		r.add(Check{Name: "login", Status: Fail, Found: "Network.SSH.KnownHostsFile: " + hostErr.Error(),
			Fix: "pin the login node's host key in " + h.KnownHostsFile + " (ssh-keyscan it from a trusted network and compare the fingerprint with the site's)"})
		r.add(Check{Name: "auth", Status: Skip, Found: "not tried: no pinned login host key"})
		return nil
	}
	if keyErr != nil {
		r.add(Check{Name: "login", Status: Skip, Found: "not tried: no key to log in with"})
		r.add(Check{Name: "auth", Status: Fail, Found: "Network.SSH.KeyFile: " + keyErr.Error(),
			Fix: "give Network.SSH.KeyFile a private key without passphrase, readable by sluice-vk only (mode 0600)"})
		return nil
	}
	a.keyDesc = signer.PublicKey().Type() + " key " + ssh.FingerprintSHA256(signer.PublicKey())
	a.auth = []ssh.AuthMethod{ssh.PublicKeys(signer)}
	if h.CertificateFile != "" {
		if cs, err := sshx.NewCertSigner(signer, h.CertificateFile); err == nil {
			a.auth = []ssh.AuthMethod{cs.AuthMethod()}
			a.keyDesc += " with its certificate"
		}
	}
	return a
}

// dial connects to the login node and adds the login and auth checks. It
// returns the client, or nil when the connection failed.
func (a *access) dial(ctx context.Context, r *Report, h config.SSH, timeout time.Duration) *ssh.Client {
	seen := &hostKeySeen{check: a.loginKeys}
	cfg := &ssh.ClientConfig{
		User: a.user, Auth: a.loginAuth(), HostKeyCallback: seen.callback,
		HostKeyAlgorithms: sshx.HostKeyAlgorithms(a.loginKeys, a.addr), Timeout: timeout,
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dialer := a.dialer
	if dialer == nil {
		dialer = (&net.Dialer{}).DialContext
	}
	client, err := sshx.Dial(ctx, dialer, a.addr, cfg)
	r.add(loginCheck(a.addr, h, seen, err))
	r.add(authCheck(a, seen, err))
	return client
}

// loginCheck decides the login line from the outcome of the connection.
func loginCheck(addr string, h config.SSH, seen *hostKeySeen, err error) Check {
	c := Check{Name: "login"}
	switch classifyDial(err, seen) {
	case dialUnreachable:
		c.Status, c.Found = Fail, "the login node's sshd did not answer: "+err.Error()
		c.Fix = "check Network.SSH.LoginHost and Port, and that this host may reach " + addr + " (firewall, bastion)"
		return c
	case dialHostKey:
		c.Status, c.Found = Fail, addr+": "+seen.err.Error()
		c.Fix = "pin the login node's current host key in " + h.KnownHostsFile + " once the site confirms its fingerprint; never accept it unseen"
		return c
	}
	key := seen.key.Type() + " " + ssh.FingerprintSHA256(seen.key)
	if h.InsecureIgnoreHostKeys {
		c.Status, c.Found = Warn, addr+" reached; its host key "+key+" is NOT checked (Network.SSH.InsecureIgnoreHostKeys)"
		c.Fix = "pin the key in a known_hosts file (Network.SSH.KnownHostsFile) and turn InsecureIgnoreHostKeys off"
		return c
	}
	c.Status, c.Found = OK, addr+" reached; its host key "+key+" is pinned in "+h.KnownHostsFile
	return c
}

// authCheck decides the auth line.
func authCheck(a *access, seen *hostKeySeen, err error) Check {
	c := Check{Name: "auth"}
	switch classifyDial(err, seen) {
	case dialOK:
		c.Status, c.Found = OK, a.user+" logged in with the "+a.keyDesc
	case dialAuth:
		c.Status, c.Found = Fail, a.user+" was refused with the "+a.keyDesc+": "+err.Error()
		c.Fix = "add the public key to ~" + a.user + "/.ssh/authorized_keys on the site, or renew the certificate, and check Network.SSH.User"
	default:
		c.Status, c.Found = Skip, "not tried: the login node was not reached"
	}
	return c
}

// certificateCheck decides the certificate line: none configured, or the
// certificate's pairing with the key and its validity, warning within
// CertificateWarnBefore of its end.
func certificateCheck(h config.SSH, key ssh.Signer, now time.Time) Check {
	c := Check{Name: "certificate"}
	if h.CertificateFile == "" {
		c.Status, c.Found = OK, "none configured (the plain key is offered)"
		return c
	}
	cert, err := sshx.ReadCertificate(h.CertificateFile)
	if err == nil && key != nil {
		_, err = sshx.NewCertSigner(key, h.CertificateFile)
	}
	if err == nil {
		// Also without a key to pair it with.
		err = sshx.CheckCertValidity(h.CertificateFile, cert, now)
	}
	switch {
	case errors.Is(err, sshx.ErrCertNotValid):
		c.Status, c.Found = Fail, err.Error()+"; the other checks used the plain key"
		c.Fix = "renew the certificate in " + h.CertificateFile + " (sluice reads it again at each connection: no restart needed)"
		return c
	case err != nil:
		c.Status, c.Found = Fail, err.Error()
		c.Fix = "give Network.SSH.CertificateFile the OpenSSH user certificate of Network.SSH.KeyFile's key (id_*-cert.pub)"
		return c
	}
	end := sshx.CertValidBefore(cert)
	if end.IsZero() {
		c.Status, c.Found = OK, fmt.Sprintf("%s: user certificate (serial %d) valid, with no end", h.CertificateFile, cert.Serial)
		return c
	}
	left := end.Sub(now).Round(time.Second)
	c.Found = fmt.Sprintf("%s: user certificate (serial %d) valid until %s (%s left)", h.CertificateFile, cert.Serial,
		end.UTC().Format(time.RFC3339), left)
	c.Status = OK
	warn := h.CertificateWarnBefore
	if warn == 0 {
		warn = sshx.DefaultCertWarnBefore
	}
	if left < warn {
		c.Status = Warn
		c.Fix = "renew it before it ends (Network.SSH.CertificateWarnBefore is " + warn.String() + ")"
	}
	return c
}
