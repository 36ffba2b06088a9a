package sshx

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func rsaKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestHostKeysRefusesNoPins(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  string
	}{
		{"no file", nil, "no known_hosts file given"},
		{"empty file", []string{writeFile(t, "kh", "# nothing\n\n")}, "pin no host key"},
		{"missing file", []string{filepath.Join(t.TempDir(), "absent")}, "no such file"},
		{"garbage", []string{writeFile(t, "kh", "this is not a key line\n")}, "no valid entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb, err := HostKeys(tt.files...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("HostKeys(%q) = %v, %v; want an error containing %q", tt.files, cb != nil, err, tt.want)
			}
		})
	}
}

func TestHostKeysCheck(t *testing.T) {
	pinned := sshxtest.NewSigner(t).PublicKey()
	other := sshxtest.NewSigner(t).PublicKey()
	revoked := sshxtest.NewSigner(t).PublicKey()
	kh := knownhosts.Line([]string{"[127.0.0.1]:2222"}, pinned) + "\n" +
		"@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(revoked))) + "\n"
	file := writeFile(t, "known_hosts", kh)
	cb, err := HostKeys(file)
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	tests := []struct {
		name string
		host string
		key  ssh.PublicKey
		want string // "" for accepted
	}{
		{"pinned", "127.0.0.1:2222", pinned, ""},
		{"mismatch", "127.0.0.1:2222", other, "host key mismatch"},
		{"unknown host", "127.0.0.1:2223", pinned, "is unknown"},
		{"revoked", "127.0.0.1:2222", revoked, "revoked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cb(tt.host, remote, tt.key)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("check = %v; want nil", err)
				}
				return
			}
			var hke *HostKeyError
			if !errors.As(err, &hke) {
				t.Fatalf("check = %v; want a *HostKeyError", err)
			}
			msg := err.Error()
			for _, w := range []string{tt.want, tt.host, ssh.FingerprintSHA256(tt.key)} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestHostKeyAlgorithms(t *testing.T) {
	ed := sshxtest.NewSigner(t).PublicKey()
	rsaPub := rsaKey(t)
	kh := knownhosts.Line([]string{"login.example.org"}, ed) + "\n" +
		knownhosts.Line([]string{"login.example.org"}, rsaPub) + "\n" +
		knownhosts.Line([]string{"[10.0.0.1]:2222"}, rsaPub) + "\n"
	cb, err := HostKeys(writeFile(t, "known_hosts", kh))
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	tests := []struct {
		addr string
		want []string
	}{
		{"login.example.org:22", []string{ssh.KeyAlgoED25519, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}},
		{"login.example.org", []string{ssh.KeyAlgoED25519, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}},
		{"10.0.0.1:2222", []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}},
		{"10.0.0.1:22", nil},
		{"other.example.org:22", nil},
	}
	for _, tt := range tests {
		got := HostKeyAlgorithms(cb, tt.addr)
		if !slices.Equal(got, tt.want) {
			t.Errorf("HostKeyAlgorithms(%q) = %q; want %q", tt.addr, got, tt.want)
		}
	}
	if got := HostKeyAlgorithms(nil, "x:22"); got != nil {
		t.Errorf("HostKeyAlgorithms(nil) = %q; want nil", got)
	}
}
