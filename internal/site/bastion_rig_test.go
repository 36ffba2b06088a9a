//go:build rig

package site

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// bastionConfig is a configuration that reaches the rig's login node
// through its bastion (sshd-bastion), as alice.
func bastionConfig(t *testing.T, rig *testrig.Rig) *config.Config {
	t.Helper()
	addr, ok := rig.Lookup("RIG_BASTION_ADDR")
	if !ok {
		testrig.Unavailable(t, "the rig has no bastion (hack/rig/rig.sh start sshd-bastion)")
	}
	c := &config.Config{}
	c.Site.Access = config.AccessSSH
	h := &c.Network.SSH
	h.LoginHost = rig.Get(t, "RIG_LOGIN_ADDR")
	h.Port = atoiOr(t, rig.Get(t, "RIG_LOGIN_PORT"))
	h.User = rig.Get(t, "RIG_USER")
	h.Auth = "publickey"
	h.KeyFile = rig.Get(t, "RIG_KEY")
	h.KnownHostsFile = rig.Get(t, "RIG_KNOWN_HOSTS")
	h.Bastion = config.Bastion{Host: addr, Port: atoiOr(t, rig.Get(t, "RIG_BASTION_PORT")), KnownHostsFile: rig.Get(t, "RIG_BASTION_KNOWN_HOSTS")}
	return c
}

func atoiOr(t *testing.T, s string) int {
	t.Helper()
	p, err := net.LookupPort("tcp", s)
	if err != nil {
		t.Fatalf("port %q: %v", s, err)
	}
	return p
}

// hostAddrs are the addresses of the host's own interfaces.
func hostAddrs(t *testing.T) map[string]bool {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out[n.IP.String()] = true
		}
	}
	return out
}

// TestBastionRig runs commands and moves files on the login node through
// the bastion: the login node sees the connection come from the bastion,
// not from the host.
func TestBastionRig(t *testing.T) {
	rig := testrig.Load(t)
	r, err := Open(bastionConfig(t, rig), testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.(*SSH).Close() }) // after rigDir's cleanup
	ctx := ctxFor(t)
	out, err := r.Run(ctx, nil, "sh", "-c", `echo "$SSH_CONNECTION"`)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 {
		t.Fatalf("SSH_CONNECTION = %q; want 4 fields", out)
	}
	if hostAddrs(t)[f[0]] {
		t.Errorf("the login node saw the connection come from %s, an address of the host; want the bastion's", f[0])
	}
	if f[2] != rig.Get(t, "RIG_LOGIN_ADDR") {
		t.Errorf("connected to %s; want the login node %s", f[2], rig.Get(t, "RIG_LOGIN_ADDR"))
	}
	// SFTP goes the same way.
	dir := rigDir(t, rig, r)
	if err := r.WriteFile(ctx, dir+"/through-bastion", []byte("hop\n"), 0o600); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := r.Run(ctx, nil, "cat", dir+"/through-bastion")
	if err != nil || string(got) != "hop\n" {
		t.Errorf("cat = %q, %v; want hop", got, err)
	}
}

// TestBastionHostKeysRig: each hop's host key is checked on its own: a
// wrong pin for the bastion, or for the login node behind it, is refused
// with a host key error naming that hop.
func TestBastionHostKeysRig(t *testing.T) {
	rig := testrig.Load(t)
	base := bastionConfig(t, rig)
	dir := t.TempDir()
	// The login node's key pinned for the bastion, and the bastion's for
	// the login node: both wrong.
	login, err := os.ReadFile(base.Network.SSH.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	bastion, err := os.ReadFile(base.Network.SSH.Bastion.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	swap := func(name string, data []byte, from, to string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(data), from, to)), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	bastionAddr, loginAddr := base.Network.SSH.Bastion.Host, base.Network.SSH.LoginHost
	for _, tc := range []struct {
		name     string
		edit     func(c *config.Config)
		wantHost string
	}{
		{"bastion", func(c *config.Config) {
			c.Network.SSH.Bastion.KnownHostsFile = swap("bastion", login, loginAddr, bastionAddr)
		}, bastionAddr},
		{"login", func(c *config.Config) {
			c.Network.SSH.KnownHostsFile = swap("login", bastion, bastionAddr, loginAddr)
		}, loginAddr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bastionConfig(t, rig)
			tc.edit(c)
			r, err := Open(c, testLogger(t))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer r.(*SSH).Close()
			_, err = r.Run(ctxFor(t), nil, "true")
			var keyErr *sshx.HostKeyError
			if !errors.As(err, &keyErr) {
				t.Fatalf("Run with a wrong %s key: %v; want a host key error", tc.name, err)
			}
			if !strings.HasPrefix(keyErr.Host, tc.wantHost+":") {
				t.Errorf("host key error for %s; want it for the %s, %s", keyErr.Host, tc.name, tc.wantHost)
			}
		})
	}
}
