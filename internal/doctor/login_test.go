package doctor

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// testAccess is the access to srv at addr with the pinned keys of known,
// offering srv's client key, or another one.
func testAccess(t *testing.T, srv *sshxtest.Server, addr, known string, rightKey bool) (*access, *hostKeySeen) {
	t.Helper()
	keys, err := sshx.HostKeys(known)
	if err != nil {
		t.Fatal(err)
	}
	key := srv.ClientKey
	if !rightKey {
		key = sshxtest.NewSigner(t)
	}
	a := &access{addr: addr, user: "alice", auth: []ssh.AuthMethod{ssh.PublicKeys(key)}, loginKeys: keys, keyDesc: "test key"}
	return a, &hostKeySeen{check: keys}
}

func dialTest(t *testing.T, a *access, seen *hostKeySeen) (*ssh.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return sshx.Dial(ctx, (&net.Dialer{}).DialContext, a.addr, &ssh.ClientConfig{
		User: a.user, Auth: a.auth, HostKeyCallback: seen.callback,
		HostKeyAlgorithms: sshx.HostKeyAlgorithms(a.loginKeys, a.addr),
	})
}

// TestDial runs the login checks against a test SSH server: reached with
// its key pinned and the key accepted; a wrong pinned key; a refused key;
// a port that never speaks SSH.
func TestDial(t *testing.T) {
	srv := sshxtest.Start(t)
	good := sshxtest.KnownHosts(t, srv.Addr, srv.HostKey.PublicKey())
	bad := sshxtest.KnownHosts(t, srv.Addr, sshxtest.NewSigner(t).PublicKey())
	silent := sshxtest.SilentListener(t)
	for _, tc := range []struct {
		name         string
		addr, known  string
		rightKey     bool
		login, auth  Status
		loginFound   string
		clientWanted bool
	}{
		{"ok", srv.Addr, good, true, OK, OK, "is pinned in " + good, true},
		{"wrong pinned key", srv.Addr, bad, true, Fail, Skip, "host key mismatch", false},
		{"key refused", srv.Addr, good, false, OK, Fail, "reached", false},
		{"not ssh", silent, good, true, Fail, Skip, "did not answer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := testAccess(t, srv, tc.addr, tc.known, tc.rightKey)
			r := &Report{}
			client := a.dial(context.Background(), r, config.SSH{KnownHostsFile: tc.known}, time.Second)
			if client != nil {
				client.Close()
			}
			login, _ := r.Find("login")
			auth, _ := r.Find("auth")
			if login.Status != tc.login || auth.Status != tc.auth || !strings.Contains(login.Found, tc.loginFound) || (client != nil) != tc.clientWanted {
				t.Errorf("got login %+v, auth %+v, client %v; want %s %q, %s", login, auth, client != nil, tc.login, tc.loginFound, tc.auth)
			}
		})
	}
}

func TestCertificateCheck(t *testing.T) {
	dir := t.TempDir()
	ca, key := sshxtest.NewSigner(t), sshxtest.NewSigner(t)
	now := time.Now()
	write := func(name string, k ssh.PublicKey, typ uint32, after, before time.Time) string {
		file := filepath.Join(dir, name)
		sshxtest.WriteCertificate(t, file, sshxtest.Certificate(t, ca, k, typ, []string{"alice"}, after, before))
		return file
	}
	plain := filepath.Join(dir, "plain.pub")
	if err := os.WriteFile(plain, ssh.MarshalAuthorizedKey(key.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		file   string
		status Status
		found  string
		fix    string
	}{
		{"none", "", OK, "none configured", ""},
		{"valid", write("valid", key.PublicKey(), ssh.UserCert, now.Add(-time.Hour), now.Add(24*time.Hour)), OK, "valid until", ""},
		{"ends soon", write("soon", key.PublicKey(), ssh.UserCert, now.Add(-time.Hour), now.Add(30*time.Minute)), Warn, "left", "renew it before it ends"},
		{"expired", write("expired", key.PublicKey(), ssh.UserCert, now.Add(-48*time.Hour), now.Add(-time.Hour)), Fail, "expired", "renew the certificate"},
		{"not yet", write("future", key.PublicKey(), ssh.UserCert, now.Add(time.Hour), now.Add(48*time.Hour)), Fail, "not yet valid", "renew"},
		{"other key", write("other", sshxtest.NewSigner(t).PublicKey(), ssh.UserCert, now.Add(-time.Hour), now.Add(24*time.Hour)), Fail, "certifies the key", "OpenSSH user certificate"},
		{"host cert", write("host", key.PublicKey(), ssh.HostCert, now.Add(-time.Hour), now.Add(24*time.Hour)), Fail, "host certificate", "OpenSSH user certificate"},
		{"plain key", plain, Fail, "not a certificate", "OpenSSH user certificate"},
		{"missing", filepath.Join(dir, "nope"), Fail, "no such file", "OpenSSH user certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := config.SSH{CertificateFile: tc.file, CertificateWarnBefore: 2 * time.Hour}
			got := certificateCheck(h, key, now)
			if got.Status != tc.status || !strings.Contains(got.Found, tc.found) || !strings.Contains(got.Fix, tc.fix) {
				t.Errorf("got %+v; want %s with %q, fix %q", got, tc.status, tc.found, tc.fix)
			}
			if tc.name == "expired" || tc.name == "not yet" {
				// The key file unreadable: the window is still checked.
				if got := certificateCheck(h, nil, now); got.Status != Fail {
					t.Errorf("without the key: got %+v; want FAIL", got)
				}
			}
		})
	}
}

// TestLoginAccess: what cannot be read before connecting is a line of the
// report, and no connection is tried.
func TestLoginAccess(t *testing.T) {
	dir := t.TempDir()
	known := sshxtest.KnownHosts(t, "login:22", sshxtest.NewSigner(t).PublicKey())
	for _, tc := range []struct {
		name        string
		h           config.SSH
		login, auth Status
	}{
		{"no known_hosts", config.SSH{Auth: "publickey", KnownHostsFile: filepath.Join(dir, "nope"), KeyFile: filepath.Join(dir, "key")}, Fail, Skip},
		{"no key", config.SSH{Auth: "publickey", KnownHostsFile: known, KeyFile: filepath.Join(dir, "key")}, Skip, Fail},
		{"kerberos without a realm", config.SSH{Auth: "kerberos", KnownHostsFile: known}, Skip, Skip},
		{"kerberos without a keytab", config.SSH{Auth: "kerberos", KnownHostsFile: known,
			Kerberos: config.Kerberos{Principal: "alice", Realm: "EXAMPLE.ORG", KDCs: []string{"127.0.0.1:1"}, KeytabFile: filepath.Join(dir, "nope.keytab")}}, Skip, Skip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.LoginHost, tc.h.Port, tc.h.User = "login", 22, "alice"
			r := &Report{}
			if a := loginAccess(r, tc.h, time.Now()); a != nil {
				t.Fatalf("access %+v; want none", a)
			}
			login, _ := r.Find("login")
			auth, _ := r.Find("auth")
			if _, ok := r.Find("certificate"); !ok || login.Status != tc.login || auth.Status != tc.auth {
				t.Errorf("got %+v; want login %s, auth %s", r.Checks, tc.login, tc.auth)
			}
		})
	}
}
