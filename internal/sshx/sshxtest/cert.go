package sshxtest

import (
	"crypto/rand"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Certificate signs key with ca as a certificate of type typ (ssh.UserCert
// or ssh.HostCert) for principals, valid from after to before.
func Certificate(t testing.TB, ca ssh.Signer, key ssh.PublicKey, typ uint32, principals []string, after, before time.Time) *ssh.Certificate {
	t.Helper()
	cert := &ssh.Certificate{
		Key:             key,
		Serial:          uint64(time.Now().UnixNano()),
		CertType:        typ,
		KeyId:           "sshxtest",
		ValidPrincipals: principals,
		ValidAfter:      uint64(after.Unix()),
		ValidBefore:     uint64(before.Unix()),
	}
	if typ == ssh.UserCert {
		cert.Permissions.Extensions = map[string]string{"permit-pty": ""}
	}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatalf("sshxtest: sign certificate: %v", err)
	}
	return cert
}

// WriteCertificate writes cert to file in the one-line *-cert.pub format.
func WriteCertificate(t testing.TB, file string, cert *ssh.Certificate) {
	t.Helper()
	if err := os.WriteFile(file, ssh.MarshalAuthorizedKey(cert), 0o644); err != nil {
		t.Fatalf("sshxtest: write certificate: %v", err)
	}
}
