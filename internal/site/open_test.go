package site

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// writeKey writes a fresh ed25519 private key, mode 0600, and returns its
// file and signer.
func writeKey(t *testing.T) (string, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return file, signer
}

// TestOpenCertificate: Open offers Network.SSH.CertificateFile with the
// key, and a certificate replaced on disk is used by the next connection.
func TestOpenCertificate(t *testing.T) {
	srv := sshxtest.Start(t)
	ca := sshxtest.NewSigner(t)
	srv.TrustUserCA(ca.PublicKey())
	keyFile, key := writeKey(t)
	certFile := filepath.Join(t.TempDir(), "id_ed25519-cert.pub")
	now := time.Now()
	certify := func(by ssh.Signer) {
		sshxtest.WriteCertificate(t, certFile, sshxtest.Certificate(t, by, key.PublicKey(), ssh.UserCert,
			[]string{"alice"}, now.Add(-time.Minute), now.Add(24*time.Hour)))
	}
	certify(ca)
	host, port, _ := net.SplitHostPort(srv.Addr)
	p, _ := strconv.Atoi(port)
	cfg := &config.Config{Site: config.Site{Access: config.AccessSSH}, Network: config.Network{SSH: config.SSH{
		LoginHost: host, Port: p, User: "alice", Auth: "publickey",
		KeyFile: keyFile, KnownHostsFile: sshxtest.KnownHosts(t, srv.Addr, srv.HostKey.PublicKey()),
		CertificateFile: certFile, CertificateWarnBefore: time.Hour,
	}}}
	r, err := Open(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.(io.Closer).Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := r.Run(ctx, nil, "echo", "ok"); err != nil || string(out) != "ok\n" {
		t.Fatalf("Run with the certificate = %q, %v; want ok", out, err)
	}

	// A certificate of a CA the server does not trust replaces it: the
	// next connection is refused, so the file was read again.
	certify(sshxtest.NewSigner(t))
	srv.Drop()
	if _, err := r.Run(ctx, nil, "echo", "ok"); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("Run with an untrusted certificate = %v; want refused by the server", err)
	}
	// Renewed by the trusted CA: a later connection works, no restart.
	certify(ca)
	for {
		_, err := r.Run(ctx, nil, "echo", "ok")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Run after the renewal: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// An expired certificate at start is refused by Open, naming the key.
	sshxtest.WriteCertificate(t, certFile, sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert,
		[]string{"alice"}, now.Add(-48*time.Hour), now.Add(-time.Hour)))
	_, err = Open(cfg, testLogger(t))
	if !errors.Is(err, sshx.ErrCertNotValid) || !strings.Contains(err.Error(), "Network.SSH.CertificateFile") {
		t.Fatalf("Open with an expired certificate = %v; want the validity error naming Network.SSH.CertificateFile", err)
	}
}
