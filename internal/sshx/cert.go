package sshx

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultCertWarnBefore is how long before a user certificate expires
// CertSigner starts warning, when its WarnBefore is zero.
const DefaultCertWarnBefore = 2 * time.Hour

// CertSigner signs with a private key and offers it with the OpenSSH user
// certificate read from File. It reads File again at each authentication
// and uses the new certificate when the content changed, so a certificate
// renewed outside sluice (a 24-hour one, or a Secret updated by the kubelet)
// is used by the next connection without a restart.
//
// A certificate that is not a user certificate, is for another key, or is
// not valid now fails the authentication with an error naming File and the
// validity window. Create it with NewCertSigner, which checks the
// certificate once.
type CertSigner struct {
	// WarnBefore is how long before the certificate expires each
	// authentication logs a warning. If zero, DefaultCertWarnBefore.
	WarnBefore time.Duration
	// Logger receives the warnings and the renewals. If nil,
	// slog.Default().
	Logger *slog.Logger

	key  ssh.Signer
	file string
	now  func() time.Time

	mu     sync.Mutex
	data   []byte // the certificate file's content last read
	cert   *ssh.Certificate
	signer ssh.Signer // key with cert
}

// NewCertSigner pairs key with the user certificate in file (the
// one-line id_*-cert.pub format) and checks it: it must be a user
// certificate for key and be valid now.
func NewCertSigner(key ssh.Signer, file string) (*CertSigner, error) {
	c := &CertSigner{key: key, file: file, now: time.Now}
	if _, err := c.current(); err != nil {
		return nil, err
	}
	return c, nil
}

// File is the certificate's file.
func (c *CertSigner) File() string { return c.file }

// Certificate returns the certificate last read.
func (c *CertSigner) Certificate() *ssh.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert
}

// AuthMethod is public key authentication with the certificate, read again
// at each use.
func (c *CertSigner) AuthMethod() ssh.AuthMethod {
	return ssh.PublicKeysCallback(c.Signers)
}

// Signers returns the key with the certificate now on disk, for
// ssh.PublicKeysCallback.
func (c *CertSigner) Signers() ([]ssh.Signer, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return []ssh.Signer{s}, nil
}

// current reads the certificate file, parses it again if its content
// changed, and checks that it is valid now.
func (c *CertSigner) current() (ssh.Signer, error) {
	data, err := os.ReadFile(c.file)
	if err != nil {
		return nil, fmt.Errorf("ssh certificate: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.signer == nil || !bytes.Equal(data, c.data) {
		cert, signer, err := pairCertificate(c.key, c.file, data)
		if err != nil {
			return nil, err
		}
		if c.cert != nil {
			c.logger().Info("sshx: user certificate renewed", "file", c.file,
				"serial", cert.Serial, "validBefore", validTime(cert.ValidBefore))
		}
		c.data, c.cert, c.signer = data, cert, signer
	}
	now := c.now()
	if err := CheckCertValidity(c.file, c.cert, now); err != nil {
		return nil, err
	}
	warn := c.WarnBefore
	if warn == 0 {
		warn = DefaultCertWarnBefore
	}
	if left := certTimeLeft(c.cert, now); left < warn {
		c.logger().Warn("sshx: user certificate expires soon; renew it", "file", c.file,
			"validBefore", validTime(c.cert.ValidBefore), "left", left.Round(time.Second).String())
	}
	return c.signer, nil
}

func (c *CertSigner) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// ReadCertificate reads the OpenSSH certificate in file.
func ReadCertificate(file string) (*ssh.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("ssh certificate: %w", err)
	}
	return parseCertificate(file, data)
}

func parseCertificate(file string, data []byte) (*ssh.Certificate, error) {
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil, fmt.Errorf("ssh certificate %s: %w", file, err)
	}
	cert, ok := pub.(*ssh.Certificate)
	if !ok {
		return nil, fmt.Errorf("ssh certificate %s: a plain %s key, not a certificate", file, pub.Type())
	}
	return cert, nil
}

// pairCertificate parses data, the content of file, as a user certificate
// for key and returns it and the signer offering it.
func pairCertificate(key ssh.Signer, file string, data []byte) (*ssh.Certificate, ssh.Signer, error) {
	cert, err := parseCertificate(file, data)
	if err != nil {
		return nil, nil, err
	}
	if cert.CertType != ssh.UserCert {
		return nil, nil, fmt.Errorf("ssh certificate %s: a host certificate, not a user certificate", file)
	}
	signer, err := ssh.NewCertSigner(cert, key)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh certificate %s: certifies the key %s, not the private key's %s",
			file, ssh.FingerprintSHA256(cert.Key), ssh.FingerprintSHA256(key.PublicKey()))
	}
	return cert, signer, nil
}

// ErrCertNotValid is what CheckCertValidity's errors wrap.
var ErrCertNotValid = errors.New("certificate not valid now")

// CheckCertValidity reports whether cert, read from file, is valid at now,
// with an error naming file and the validity window when it is not.
func CheckCertValidity(file string, cert *ssh.Certificate, now time.Time) error {
	t := uint64(now.Unix())
	var why string
	switch {
	case t < cert.ValidAfter:
		why = "not yet valid"
	case cert.ValidBefore != ssh.CertTimeInfinity && t >= cert.ValidBefore:
		why = "expired"
	default:
		return nil
	}
	return fmt.Errorf("ssh certificate %s: %s: valid from %s to %s, now %s: %w", file, why,
		validTime(cert.ValidAfter), validTime(cert.ValidBefore), now.UTC().Format(time.RFC3339), ErrCertNotValid)
}

// CertValidBefore is when cert expires; the zero time if never.
func CertValidBefore(cert *ssh.Certificate) time.Time {
	if cert.ValidBefore == ssh.CertTimeInfinity || cert.ValidBefore > 1<<62 {
		return time.Time{}
	}
	return time.Unix(int64(cert.ValidBefore), 0)
}

// certTimeLeft is how long cert is still valid after now; a very long time
// for a certificate that never expires.
func certTimeLeft(cert *ssh.Certificate, now time.Time) time.Duration {
	end := CertValidBefore(cert)
	if end.IsZero() {
		return time.Duration(1<<63 - 1)
	}
	return end.Sub(now)
}

// validTime formats a certificate time (seconds since the epoch).
func validTime(t uint64) string {
	switch {
	case t == 0:
		return "(no start)"
	case t == ssh.CertTimeInfinity || t > 1<<62:
		return "(no end)"
	}
	return time.Unix(int64(t), 0).UTC().Format(time.RFC3339)
}
