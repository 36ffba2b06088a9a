package sshx

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestSigner(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		mode os.FileMode
		want string // error substring; "" for success
	}{
		{"0600", pem.EncodeToMemory(plain), 0o600, ""},
		{"0400", pem.EncodeToMemory(plain), 0o400, ""},
		{"group readable", pem.EncodeToMemory(plain), 0o640, "permissions 0640 are too open"},
		{"world readable", pem.EncodeToMemory(plain), 0o604, "permissions 0604 are too open"},
		{"passphrase", pem.EncodeToMemory(enc), 0o600, "protected by a passphrase"},
		{"garbage", []byte("not a key\n"), 0o600, "not a private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "id")
			if err := os.WriteFile(file, tt.data, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, tt.mode); err != nil {
				t.Fatal(err)
			}
			s, err := Signer(file)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
					t.Fatalf("Signer = %v; want an error naming %s and containing %q", err, file, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Signer: %v", err)
			}
			if got, want := ssh.FingerprintSHA256(s.PublicKey()), ssh.FingerprintSHA256(sshPub); got != want {
				t.Errorf("Signer key = %s; want %s", got, want)
			}
		})
	}
	if _, err := Signer(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Signer(absent) = %v; want not-exist", err)
	}
}
