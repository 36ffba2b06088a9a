package doctor

import (
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

// TestBoundCommand runs the command that reads /proc/net/tcp here, against
// real listeners: one on 127.0.0.1, one on every address, and a closed
// port.
func TestBoundCommand(t *testing.T) {
	bound := func(port int) string {
		t.Helper()
		out, err := exec.Command("sh", "-c", boundCommand(port)).Output()
		if err != nil {
			t.Fatalf("%s: %v", boundCommand(port), err)
		}
		return strings.TrimSpace(string(out))
	}
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	if got := bound(lo.Addr().(*net.TCPAddr).Port); got != boundLoopback {
		t.Errorf("127.0.0.1 listener: %q; want %q", got, boundLoopback)
	}
	wild, err := net.Listen("tcp", ":0") // every address, as GatewayPorts yes binds
	if err != nil {
		t.Fatal(err)
	}
	port := wild.Addr().(*net.TCPAddr).Port
	if got := bound(port); got != boundWildcard {
		t.Errorf("wildcard listener: %q; want %q", got, boundWildcard)
	}
	wild.Close()
	if got := bound(port); got != boundNone {
		t.Errorf("closed port: %q; want %q", got, boundNone)
	}
}

func TestDecideGatewayPorts(t *testing.T) {
	for _, tc := range []struct {
		bound  string
		err    error
		socks  bool
		status Status
		fix    string
	}{
		{boundLoopback, nil, true, OK, ""},
		{boundWildcard, nil, true, Fail, "GatewayPorts no"},
		{boundWildcard, nil, false, Warn, "GatewayPorts no"},
		{"", errors.New("tcpip-forward request denied by peer"), true, Fail, "AllowTcpForwarding yes"},
		{"", errors.New("tcpip-forward request denied by peer"), false, Warn, "AllowTcpForwarding yes"},
		{boundNone, nil, true, Warn, "by hand"},
		{"\x1b[2J", nil, true, Warn, "by hand"},
	} {
		got := decideGatewayPorts("n1", tc.bound, tc.err, tc.socks)
		if got.Status != tc.status || !strings.Contains(got.Fix, tc.fix) {
			t.Errorf("%q %v socks=%v: got %+v; want %s, fix with %q", tc.bound, tc.err, tc.socks, got, tc.status, tc.fix)
		}
	}
}

func TestDecideStreamLocal(t *testing.T) {
	if got := decideStreamLocal("/s/x.sock", nil, true); got.Status != OK {
		t.Errorf("allowed: %+v", got)
	}
	refused := errors.New("ssh: streamlocal-forward@openssh.com request denied by peer")
	got := decideStreamLocal("/s/x.sock", refused, true)
	if got.Status != Fail || !strings.Contains(got.Fix, "Reverse.Sshd: userspace") {
		t.Errorf("refused, needed: %+v", got)
	}
	if got := decideStreamLocal("/s/x.sock", refused, false); got.Status != Warn {
		t.Errorf("refused, not needed: %+v", got)
	}
}

func TestNeedNodeSSH(t *testing.T) {
	c := &config.Config{}
	c.Default()
	if needNodeSSH(c) {
		t.Error("tunnels off, yet the node's sshd is needed")
	}
	c.Network.EnableTunnel = true
	if !needNodeSSH(c) {
		t.Error("forward to the node, yet the node's sshd is not needed")
	}
	c.Network.SSH.ForwardTarget = "login"
	c.Network.SSH.Reverse.Enabled, c.Network.SSH.Reverse.NodeExec = true, "srun"
	if needNodeSSH(c) {
		t.Error("forward to login and reverse over srun, yet the node's sshd is needed")
	}
}

// TestDecideNodeSSHD dials a test SSH server as the node hop would, with
// the right and a wrong pinned key, the right and a wrong client key, and
// a server that never speaks SSH.
func TestDecideNodeSSHD(t *testing.T) {
	srv := sshxtest.Start(t)
	good := sshxtest.KnownHosts(t, srv.Addr, srv.HostKey.PublicKey())
	bad := sshxtest.KnownHosts(t, srv.Addr, sshxtest.NewSigner(t).PublicKey())
	silent := sshxtest.SilentListener(t)
	for _, tc := range []struct {
		name   string
		addr   string
		known  string
		key    bool
		status Status
		found  string
	}{
		{"ok", srv.Addr, good, true, OK, "is pinned in " + good},
		{"wrong pinned key", srv.Addr, bad, true, Fail, "host key mismatch"},
		{"key refused", srv.Addr, good, false, Warn, "refused the site account"},
		{"not ssh", silent, good, true, Warn, "not reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, seen := testAccess(t, srv, tc.addr, tc.known, tc.key)
			client, err := dialTest(t, a, seen)
			if client != nil {
				client.Close()
			}
			got := decideNodeSSHD("n1", tc.known, seen, err, Warn)
			if got.Status != tc.status || !strings.Contains(got.Found, tc.found) || (got.Status != OK) != (got.Fix != "") {
				t.Errorf("got %+v; want %s containing %q", got, tc.status, tc.found)
			}
		})
	}
}
