package sshx

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// fuzzKey is a fixed key, so that the fuzzer can reach a certificate of it.
func fuzzKey(f *testing.F) ssh.Signer {
	f.Helper()
	s, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzPairCertificate: any content of a certificate file gives an error or
// a user certificate of the key, never a panic.
func FuzzPairCertificate(f *testing.F) {
	key := fuzzKey(f)
	cert := &ssh.Certificate{Key: key.PublicKey(), CertType: ssh.UserCert, ValidPrincipals: []string{"alice"},
		ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, key); err != nil {
		f.Fatal(err)
	}
	f.Add(ssh.MarshalAuthorizedKey(cert))
	f.Add(ssh.MarshalAuthorizedKey(key.PublicKey()))
	f.Add([]byte("ssh-ed25519-cert-v01@openssh.com AAAA\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, s, err := pairCertificate(key, "cert", data)
		if err != nil {
			return
		}
		if c.CertType != ssh.UserCert || !bytes.Equal(c.Key.Marshal(), key.PublicKey().Marshal()) || s == nil {
			t.Fatalf("pairCertificate accepted type %d for key %s", c.CertType, ssh.FingerprintSHA256(c.Key))
		}
		_ = CheckCertValidity("cert", c, time.Now())
	})
}

// FuzzHostKeys: any known_hosts content gives an error or a callback that
// refuses an unrelated key, never a panic.
func FuzzHostKeys(f *testing.F) {
	key := fuzzKey(f).PublicKey()
	line := string(ssh.MarshalAuthorizedKey(key))
	f.Add("[127.0.0.1]:2222 " + line)
	f.Add("@cert-authority * " + line)
	f.Add("@revoked * " + line)
	f.Add("# comment\n\n@cert-authority\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		file := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cb, err := HostKeys(file)
		if err != nil {
			return
		}
		other := probeKey{}
		if cb("127.0.0.1:2222", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}, other) == nil {
			t.Fatal("a key in no file was accepted")
		}
		_ = HostKeyAlgorithms(cb, "127.0.0.1:2222")
	})
}
