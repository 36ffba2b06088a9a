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
	testSigner(t, Signer, []signerCase{
		{"group readable", 0o640, "permissions 0640 are too open"},
		{"group read only", 0o440, "permissions 0440 are too open"},
		{"world readable", 0o604, "permissions 0604 are too open"},
	})
}

// TestPodSigner: a key shared with a pod's non-root container through its
// group (fsGroup, mode 0440) is accepted; one others may read, or the group
// write, is not.
func TestPodSigner(t *testing.T) {
	testSigner(t, PodSigner, []signerCase{
		{"group read only", 0o440, ""},
		{"group readable", 0o640, ""},
		{"group writable", 0o660, "permissions 0660 are too open: others must have no access and the group may only read"},
		{"world readable", 0o444, "permissions 0444 are too open"},
		{"others execute", 0o401, "permissions 0401 are too open"},
	})
}

// signerCase is a key file mode and the error it gives ("" for none).
type signerCase struct {
	name string
	mode os.FileMode
	want string
}

// testSigner runs read on the files both readers treat alike, then on keys
// of the modes given.
func testSigner(t *testing.T, read func(string) (ssh.Signer, error), modes []signerCase) {
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
	type keyCase struct {
		name string
		data []byte
		mode os.FileMode
		want string // error substring; "" for success
	}
	tests := []keyCase{
		{"0600", pem.EncodeToMemory(plain), 0o600, ""},
		{"0400", pem.EncodeToMemory(plain), 0o400, ""},
		{"passphrase", pem.EncodeToMemory(enc), 0o600, "protected by a passphrase"},
		{"garbage", []byte("not a key\n"), 0o600, "not a private key"},
	}
	for _, m := range modes {
		tests = append(tests, keyCase{m.name, pem.EncodeToMemory(plain), m.mode, m.want})
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
			s, err := read(file)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
					t.Fatalf("read = %v; want an error naming %s and containing %q", err, file, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if got, want := ssh.FingerprintSHA256(s.PublicKey()), ssh.FingerprintSHA256(sshPub); got != want {
				t.Errorf("read key = %s; want %s", got, want)
			}
		})
	}
	if _, err := read(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read(absent) = %v; want not-exist", err)
	}
}
