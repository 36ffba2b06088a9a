package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// needNodeSSH reports whether the configuration reaches the compute
// nodes' sshd: the shadows' forward tunnel to the node, and the reverse
// tunnel unless srun carries it.
func needNodeSSH(c *config.Config) bool {
	n := c.Network
	return n.EnableTunnel && ((n.ShadowMode == "ssh" && n.SSH.ForwardTarget == "node") ||
		(n.SSH.Reverse.Enabled && n.SSH.Reverse.NodeExec == "ssh"))
}

// nodeChecks connects to host's sshd through login, as the shadows and
// kubectl port-forward do (tunnel.Hop), and checks what the reverse tunnel
// asks of it: a unix-socket forward in sockDir, the probe's directory in
// the socket directory root ("" when there is none), and where a TCP
// forward asked for 127.0.0.1 is bound.
func nodeChecks(ctx context.Context, r *Report, c *config.Config, a *access, login *ssh.Client, host, sockDir string, timeout time.Duration) {
	h := c.Network.SSH
	bad := Warn
	if needNodeSSH(c) {
		bad = Fail
	}
	skip := func(why string) {
		r.add(Check{Name: "stream-local", Status: Skip, Found: why})
		r.add(Check{Name: "gateway-ports", Status: Skip, Found: why})
		r.add(Check{Name: "node-forwarding", Status: Skip, Found: why})
	}
	if h.NodeKnownHostsFile == "" {
		r.add(Check{Name: "node-sshd", Status: Warn, Found: "not checked: Network.SSH.NodeKnownHostsFile is not set",
			Fix: "set Network.SSH.NodeKnownHostsFile to the compute nodes' pinned host keys (what ConfigMap Network.SSH.NodeHostKeys holds for the shadows)"})
		skip("not checked: no pinned node host keys")
		return
	}
	keys, err := sshx.HostKeys(h.NodeKnownHostsFile)
	if err != nil {
		r.add(Check{Name: "node-sshd", Status: bad, Found: "Network.SSH.NodeKnownHostsFile: " + err.Error(),
			Fix: "pin the compute nodes' host keys in " + h.NodeKnownHostsFile})
		skip("not checked: no pinned node host keys")
		return
	}
	seen := &hostKeySeen{check: keys}
	hop := &tunnel.Hop{User: a.user, Auth: a.auth, GSSAPI: a.gssapi, LoginHostKeys: a.loginKeys, NodeHostKeys: seen.callback, Timeout: timeout}
	node, err := hop.Node(ctx, login, host)
	r.add(decideNodeSSHD(host, h.NodeKnownHostsFile, seen, err, bad))
	if err != nil {
		skip("not checked: no connection to the node's sshd")
		return
	}
	defer node.Close()
	stream, streamed := streamLocalCheck(node, sockDir, c)
	r.add(stream)
	r.add(gatewayPortsCheck(ctx, node, host, c.Network.SSH.Reverse.AllowSocks))
	r.add(nodeForwardingCheck(node, host, streamed, c))
}

// decideNodeSSHD decides the node-sshd line from the node hop's outcome.
func decideNodeSSHD(host, file string, seen *hostKeySeen, err error, bad Status) Check {
	c := Check{Name: "node-sshd"}
	switch classifyDial(err, seen) {
	case dialOK:
		c.Status, c.Found = OK, host+"'s sshd reached through the login node; its host key "+seen.key.Type()+" "+
			ssh.FingerprintSHA256(seen.key)+" is pinned in "+file
	case dialUnreachable:
		c.Status, c.Found = bad, host+"'s sshd not reached from the login node: "+err.Error()
		c.Fix = "let the login node reach port 22 of the compute nodes, or set Network.SSH.Reverse.NodeExec: srun (with Reverse.Sshd: userspace)"
	case dialHostKey:
		c.Status, c.Found = Fail, host+": "+seen.err.Error()
		c.Fix = "pin the compute nodes' current host keys in " + file + " and in ConfigMap Network.SSH.NodeHostKeys, once the site confirms their fingerprints"
	default:
		c.Status, c.Found = bad, host+"'s sshd refused the site account: "+err.Error()
		c.Fix = "the compute nodes' sshd must accept the account's key while it has a job there, or set Network.SSH.Reverse.NodeExec: srun"
	}
	return c
}

// streamLocalCheck asks the node's sshd for a unix-socket forward in dir,
// as the reverse tunnel does for each endpoint, and says what the sshd
// answered.
func streamLocalCheck(node *ssh.Client, dir string, c *config.Config) (Check, forwardOutcome) {
	if dir == "" {
		return Check{Name: "stream-local", Status: Skip, Found: "not checked: the probe made no socket directory"}, forwardNotChecked
	}
	sock := path.Join(dir, "doctor.sock")
	ln, err := node.ListenUnix(sock)
	if err == nil {
		ln.Close()
	}
	r := c.Network.SSH.Reverse
	return decideStreamLocal(sock, err, r.Enabled && r.Sshd == "node"), classifyForward(err, true)
}

func decideStreamLocal(sock string, err error, needed bool) Check {
	c := Check{Name: "stream-local"}
	if err == nil {
		c.Status, c.Found = OK, "the node's sshd forwards unix sockets ("+sock+")"
		return c
	}
	c.Status, c.Found = Warn, "the node's sshd refused a unix-socket forward ("+sock+"): "+err.Error()
	if needed {
		c.Status = Fail
	}
	c.Fix = "set Network.SSH.Reverse.Sshd: userspace (sluice then starts its own sshd for each session), or have the site set AllowStreamLocalForwarding yes in the nodes' sshd_config"
	return c
}

// Where a forward asked for 127.0.0.1 was bound, from /proc/net/tcp{,6}.
const (
	boundLoopback = "loopback"
	boundWildcard = "wildcard"
	boundNone     = "none"
)

// boundCommand prints where port is listened on, as the job's script reads
// it for the SOCKS proxy (reverse.sh.tmpl): "wildcard", "loopback" or
// "none". port is a number the doctor formats; nothing else goes in.
func boundCommand(port int) string {
	return fmt.Sprintf(`cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v port=%04X '
$4 == "0A" && split($2, a, ":") == 2 && a[2] == port {
	if (a[1] ~ /^0+$/) { w = 1 } else { l = 1 }
}
END { if (w) { print "wildcard" } else if (l) { print "loopback" } else { print "none" } }'`, port)
}

// gatewayPortsCheck asks the node's sshd for a TCP forward on 127.0.0.1
// (as the SOCKS proxy does) and reads where it was bound: everywhere means
// GatewayPorts yes, and the job refuses to run the SOCKS proxy.
func gatewayPortsCheck(ctx context.Context, node *ssh.Client, host string, socks bool) Check {
	ln, err := node.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return decideGatewayPorts(host, "", err, socks)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	sess, err := node.NewSession()
	if err != nil {
		return decideGatewayPorts(host, "", err, socks)
	}
	defer sess.Close()
	var out limitedBuffer
	out.max = 64
	sess.Stdout = &out
	done := make(chan error, 1)
	go func() { done <- sess.Run(boundCommand(port)) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(commandTimeout):
		err = fmt.Errorf("no answer in %v", commandTimeout)
	}
	if err != nil {
		return decideGatewayPorts(host, "", fmt.Errorf("read /proc/net/tcp: %w", err), socks)
	}
	return decideGatewayPorts(host, strings.TrimSpace(out.String()), nil, socks)
}

func decideGatewayPorts(host, bound string, err error, socks bool) Check {
	c := Check{Name: "gateway-ports"}
	bad := Warn
	if socks {
		bad = Fail
	}
	switch {
	case err != nil:
		c.Status, c.Found = bad, "a TCP forward on "+host+"'s 127.0.0.1 failed: "+err.Error()
		c.Fix = "the SOCKS proxy (Network.SSH.Reverse.AllowSocks) needs AllowTcpForwarding yes in the nodes' sshd_config"
	case bound == boundLoopback:
		c.Status, c.Found = OK, "GatewayPorts is off on "+host+": a forward asked for 127.0.0.1 is bound there only"
	case bound == boundWildcard:
		c.Status, c.Found = bad, "GatewayPorts is on on "+host+": a forward asked for 127.0.0.1 is bound on every address, so jobs refuse the SOCKS proxy"
		c.Fix = "have the site set GatewayPorts no in the nodes' sshd_config, or leave Network.SSH.Reverse.AllowSocks off"
	default:
		c.Status, c.Found = Warn, fmt.Sprintf("the forward's listener was not found in %s's /proc/net/tcp (%q)", host, bound)
		c.Fix = "check GatewayPorts in the nodes' sshd_config by hand"
	}
	return c
}

// limitedBuffer keeps the first max bytes written to it and drops the
// rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
