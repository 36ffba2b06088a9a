package main

import (
	"crypto/ed25519"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// siteFiles are the files a tunnel reads, written for a test.
type siteFiles struct {
	key, loginHosts, nodeHosts, node string
}

// writeSiteFiles writes a fresh key (0600), known_hosts files pinning a
// fresh host key for login and node1, and a node file naming node1.
func writeSiteFiles(t *testing.T) siteFiles {
	t.Helper()
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	f := siteFiles{
		key:        filepath.Join(dir, "id"),
		loginHosts: filepath.Join(dir, "login_known_hosts"),
		nodeHosts:  filepath.Join(dir, "node_known_hosts"),
		node:       filepath.Join(dir, "node"),
	}
	write(t, f.key, string(pem.EncodeToMemory(block)), 0o600)
	write(t, f.loginHosts, knownhosts.Line([]string{"[127.0.0.1]:2222"}, hostKey)+"\n", 0o644)
	write(t, f.nodeHosts, "# node1\n"+knownhosts.Line([]string{"node1"}, hostKey)+"\n", 0o644)
	write(t, f.node, "node1\n", 0o644)
	return f
}

func write(t *testing.T, file, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(file, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, mode); err != nil {
		t.Fatal(err)
	}
}

func (f siteFiles) config() *config {
	return &config{
		mode: modeForward, login: "127.0.0.1:2222", user: "alice", keyFile: f.key,
		loginKnownHosts: f.loginHosts, nodeKnownHosts: f.nodeHosts, nodeFile: f.node, nodePort: 2022,
	}
}

func TestLoadHop(t *testing.T) {
	f := writeSiteFiles(t)
	hop, err := loadHop(f.config(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if hop.LoginAddr != "127.0.0.1:2222" || hop.User != "alice" || hop.NodePort != 2022 || len(hop.Auth) != 1 ||
		hop.LoginHostKeys == nil || hop.NodeHostKeys == nil {
		t.Errorf("hop = %+v", hop)
	}
}

// TestLoadHopGroupKey: the key as the shadow mounts it (mode 0440, shared
// through fsGroup) is read even when the tunnel's own user owns it, as on a
// node that writes volumes as the container's user.
func TestLoadHopGroupKey(t *testing.T) {
	f := writeSiteFiles(t)
	if err := os.Chmod(f.key, 0o440); err != nil {
		t.Fatal(err)
	}
	if _, err := loadHop(f.config(), slog.Default()); err != nil {
		t.Fatalf("key of mode 0440: %v", err)
	}
}

// TestLoadHopCertificate: --certificate pairs the key with its certificate;
// an expired one is refused naming the flag, the file and its window.
func TestLoadHopCertificate(t *testing.T) {
	f := writeSiteFiles(t)
	signer, err := ssh.ParsePrivateKey([]byte(readFile(t, f.key)))
	if err != nil {
		t.Fatal(err)
	}
	ca := sshxtest.NewSigner(t)
	now := time.Now()
	c := f.config()
	c.certFile = filepath.Join(t.TempDir(), "id-cert.pub")
	sshxtest.WriteCertificate(t, c.certFile, sshxtest.Certificate(t, ca, signer.PublicKey(), ssh.UserCert,
		[]string{"alice"}, now.Add(-time.Hour), now.Add(24*time.Hour)))
	if _, err := loadHop(c, slog.Default()); err != nil {
		t.Fatalf("loadHop with a valid certificate: %v", err)
	}
	sshxtest.WriteCertificate(t, c.certFile, sshxtest.Certificate(t, ca, signer.PublicKey(), ssh.UserCert,
		[]string{"alice"}, now.Add(-48*time.Hour), now.Add(-24*time.Hour)))
	_, err = loadHop(c, slog.Default())
	if err == nil || !strings.Contains(err.Error(), "--certificate: ssh certificate "+c.certFile+": expired: valid from") {
		t.Fatalf("loadHop with an expired certificate = %v; want the --certificate validity error", err)
	}
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLoadHopEmptyNodeFile(t *testing.T) {
	// No node yet is the normal state before the job starts.
	f := writeSiteFiles(t)
	write(t, f.node, "", 0o644)
	if _, err := loadHop(f.config(), slog.Default()); err != nil {
		t.Fatalf("empty node file: %v", err)
	}
}

func TestLoadHopRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, f *siteFiles)
		want  []string
	}{
		{"key missing", func(t *testing.T, f *siteFiles) { f.key += ".missing" }, []string{"--key: ssh key:", "no such file"}},
		{"key too open", func(t *testing.T, f *siteFiles) {
			if err := os.Chmod(f.key, 0o444); err != nil {
				t.Fatal(err)
			}
		}, []string{"--key: ssh key", "permissions 0444 are too open"}},
		{"key not a key", func(t *testing.T, f *siteFiles) { write(t, f.key, "not a key\n", 0o600) }, []string{"--key: ssh key", "not a private key"}},
		{"key a public key", func(t *testing.T, f *siteFiles) { f.key = f.loginHosts }, []string{"--key: ssh key"}},
		{"key a directory", func(t *testing.T, f *siteFiles) { f.key = filepath.Dir(f.key) }, []string{"--key: ssh key", "not a regular file"}},
		{"login known hosts missing", func(t *testing.T, f *siteFiles) { f.loginHosts += ".missing" }, []string{"--login-known-hosts: host keys:", "no such file"}},
		{"login known hosts empty", func(t *testing.T, f *siteFiles) { write(t, f.loginHosts, "# nothing\n\n", 0o644) }, []string{"--login-known-hosts: host keys:", "pin no host key"}},
		{"node known hosts empty", func(t *testing.T, f *siteFiles) { write(t, f.nodeHosts, "", 0o644) }, []string{"--node-known-hosts: host keys:", "pin no host key"}},
		{"node known hosts garbage", func(t *testing.T, f *siteFiles) { write(t, f.nodeHosts, "node1 ssh-ed25519 AAAA!!\n", 0o644) }, []string{"--node-known-hosts: host keys:"}},
		{"node file missing", func(t *testing.T, f *siteFiles) { f.node += ".missing" }, []string{"--node-file:", "no such file"}},
		{"node file a directory", func(t *testing.T, f *siteFiles) { f.node = filepath.Dir(f.node) }, []string{"--node-file:", "is a directory"}},
		{"all at once", func(t *testing.T, f *siteFiles) {
			f.key, f.loginHosts, f.nodeHosts, f.node = "/nonexistent/k", "/nonexistent/l", "/nonexistent/n", "/nonexistent/f"
		}, []string{"--key:", "--login-known-hosts:", "--node-known-hosts:", "--node-file:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeSiteFiles(t)
			tc.spoil(t, &f)
			hop, err := loadHop(f.config(), slog.Default())
			if err == nil {
				t.Fatalf("loadHop accepted it: %+v", hop)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to contain %q", err, w)
				}
			}
		})
	}
}
