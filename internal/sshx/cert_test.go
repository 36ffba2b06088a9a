package sshx

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// certSetup is a test server trusting a user CA and a file holding a
// certificate of the server's client key, valid for the next day.
type certSetup struct {
	srv  *sshxtest.Server
	ca   ssh.Signer
	file string
}

func newCertSetup(t *testing.T) certSetup {
	t.Helper()
	srv := sshxtest.Start(t)
	ca := sshxtest.NewSigner(t)
	srv.TrustUserCA(ca.PublicKey())
	file := filepath.Join(t.TempDir(), "id-cert.pub")
	now := time.Now()
	sshxtest.WriteCertificate(t, file, sshxtest.Certificate(t, ca, srv.ClientKey.PublicKey(), ssh.UserCert,
		[]string{"alice"}, now.Add(-time.Minute), now.Add(24*time.Hour)))
	return certSetup{srv: srv, ca: ca, file: file}
}

// dialCert connects to srv with auth and pinned host keys, and closes the
// connection.
func dialCert(t *testing.T, srv *sshxtest.Server, auth ssh.AuthMethod) error {
	t.Helper()
	cfg := clientConfig(t, srv, srv.HostKey.PublicKey())
	cfg.Auth = []ssh.AuthMethod{auth}
	return dialClose(srv.Addr, cfg)
}

// dialClose connects to addr with cfg and closes the connection.
func dialClose(addr string, cfg *ssh.ClientConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, dialer(), addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

func TestCertSignerAccepted(t *testing.T) {
	s := newCertSetup(t)
	cs, err := NewCertSigner(s.srv.ClientKey, s.file)
	if err != nil {
		t.Fatalf("NewCertSigner: %v", err)
	}
	if err := dialCert(t, s.srv, cs.AuthMethod()); err != nil {
		t.Fatalf("dial with the certificate: %v", err)
	}
	// Other keys, unknown to the server, are accepted only with a
	// certificate of the CA; RSA keys sign with SHA-2 certificate
	// algorithms.
	rsaPriv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaOther, err := ssh.NewSignerFromKey(rsaPriv)
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string]ssh.Signer{"ed25519": sshxtest.NewSigner(t), "rsa": rsaOther} {
		file := filepath.Join(t.TempDir(), name+"-cert.pub")
		now := time.Now()
		sshxtest.WriteCertificate(t, file, sshxtest.Certificate(t, s.ca, other.PublicKey(), ssh.UserCert,
			[]string{"alice"}, now.Add(-time.Minute), now.Add(5*time.Hour)))
		if err := dialCert(t, s.srv, ssh.PublicKeys(other)); err == nil {
			t.Fatalf("dial with an unknown plain %s key succeeded; want refused", name)
		}
		ocs, err := NewCertSigner(other, file)
		if err != nil {
			t.Fatalf("NewCertSigner(%s): %v", name, err)
		}
		if err := dialCert(t, s.srv, ocs.AuthMethod()); err != nil {
			t.Fatalf("dial with the %s key's certificate: %v", name, err)
		}
	}
}

func TestCertSignerRenewedOnDisk(t *testing.T) {
	s := newCertSetup(t)
	key := sshxtest.NewSigner(t)
	now := time.Now()
	write := func(ca ssh.Signer, serial uint64) {
		cert := sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(-time.Minute), now.Add(5*time.Hour))
		cert.Serial = serial
		if err := cert.SignCert(rand.Reader, ca); err != nil {
			t.Fatal(err)
		}
		sshxtest.WriteCertificate(t, s.file, cert)
	}
	// A certificate of a CA the server does not trust: refused.
	untrusted := sshxtest.NewSigner(t)
	write(untrusted, 1)
	cs, err := NewCertSigner(key, s.file)
	if err != nil {
		t.Fatalf("NewCertSigner: %v", err)
	}
	if err := dialCert(t, s.srv, cs.AuthMethod()); err == nil {
		t.Fatal("dial with an untrusted CA's certificate succeeded; want refused")
	}
	// Renewed outside sluice by the trusted CA: the next connection uses it.
	write(s.ca, 2)
	if err := dialCert(t, s.srv, cs.AuthMethod()); err != nil {
		t.Fatalf("dial after the renewal: %v", err)
	}
	if got := cs.Certificate().Serial; got != 2 {
		t.Errorf("Certificate().Serial = %d; want 2 (the renewed one)", got)
	}
}

func TestCertSignerRefuses(t *testing.T) {
	key := sshxtest.NewSigner(t)
	ca := sshxtest.NewSigner(t)
	now := time.Now()
	dir := t.TempDir()
	tests := []struct {
		name string
		cert *ssh.Certificate
		want string
	}{
		{"expired", sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(-48*time.Hour), now.Add(-24*time.Hour)),
			"expired: valid from " + time.Unix(now.Add(-48*time.Hour).Unix(), 0).UTC().Format(time.RFC3339)},
		{"not yet valid", sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(time.Hour), now.Add(2*time.Hour)),
			"not yet valid: valid from"},
		{"another key", sshxtest.Certificate(t, ca, sshxtest.NewSigner(t).PublicKey(), ssh.UserCert, []string{"alice"}, now.Add(-time.Hour), now.Add(time.Hour)),
			"certifies the key"},
		{"host certificate", sshxtest.Certificate(t, ca, key.PublicKey(), ssh.HostCert, []string{"alice"}, now.Add(-time.Hour), now.Add(time.Hour)),
			"a host certificate, not a user certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			sshxtest.WriteCertificate(t, file, tt.cert)
			_, err := NewCertSigner(key, file)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("NewCertSigner = %v; want an error naming %s and containing %q", err, file, tt.want)
			}
		})
	}
	plain := filepath.Join(dir, "plain.pub")
	if err := os.WriteFile(plain, ssh.MarshalAuthorizedKey(key.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCertSigner(key, plain); err == nil || !strings.Contains(err.Error(), "not a certificate") {
		t.Errorf("NewCertSigner(plain key) = %v; want not a certificate", err)
	}
}

// TestCertSignerExpiresInUse: a certificate that expires while in use
// fails the next connection with the validity error, before any offer to
// the server.
func TestCertSignerExpiresInUse(t *testing.T) {
	s := newCertSetup(t)
	cs, err := NewCertSigner(s.srv.ClientKey, s.file)
	if err != nil {
		t.Fatalf("NewCertSigner: %v", err)
	}
	var logs bytes.Buffer
	cs.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cs.now = func() time.Time { return time.Now().Add(23 * time.Hour) }
	if err := dialCert(t, s.srv, cs.AuthMethod()); err != nil {
		t.Fatalf("dial 1h before the end: %v", err)
	}
	if !strings.Contains(logs.String(), "expires soon") {
		t.Errorf("no expiry warning 1h before the end; logs: %s", logs.String())
	}
	cs.now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	err = dialCert(t, s.srv, cs.AuthMethod())
	if !errors.Is(err, ErrCertNotValid) || !strings.Contains(err.Error(), s.file) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("dial after the end = %v; want the expiry error naming %s", err, s.file)
	}
}
