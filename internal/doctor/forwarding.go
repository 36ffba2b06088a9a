package doctor

import (
	"errors"
	"net"
	"strings"

	"github.com/sluice-hpc/sluice/internal/config"
	"golang.org/x/crypto/ssh"
)

// Whether an sshd forwards is found by asking it to, not by reading its
// configuration: `sshd -T` needs the host keys, which the site account
// cannot read, and reads the default configuration file, which need not be
// the running sshd's.

// forwardOutcome is what an sshd answered to a forward.
type forwardOutcome int

const (
	forwardAllowed    forwardOutcome = iota // made, or failed past the sshd's policy (nothing listened)
	forwardRefused                          // administratively prohibited: the sshd's configuration
	forwardNotChecked                       // not asked
)

// classifyForward reads the answer to a direct-tcpip channel or a
// streamlocal-forward request. An sshd whose configuration forbids it
// answers "administratively prohibited" to a channel, and fails a global
// request without a reason.
func classifyForward(err error, request bool) forwardOutcome {
	var oc *ssh.OpenChannelError
	switch {
	case err == nil:
		return forwardAllowed
	case errors.As(err, &oc):
		if oc.Reason == ssh.Prohibited {
			return forwardRefused
		}
		return forwardAllowed
	case request:
		return forwardRefused
	}
	return forwardAllowed
}

// tryDirectTCPIP opens a direct-tcpip channel through conn to addr, as the
// node hop and kubectl port-forward do, and closes it.
func tryDirectTCPIP(conn *ssh.Client, addr string) forwardOutcome {
	c, err := conn.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	return classifyForward(err, false)
}

// loginForwardingCheck asks the login node's sshd for a direct-tcpip
// channel to its own address, which every hop to a compute node and every
// forward through the login node needs.
func loginForwardingCheck(login *ssh.Client, addr string, c *config.Config) Check {
	n := c.Network
	needed := needNodeSSH(c) || (n.EnableTunnel && n.ShadowMode == "ssh")
	return decideLoginForwarding(describeBanner("the login node's sshd", login), tryDirectTCPIP(login, addr), needed)
}

func decideLoginForwarding(sshd string, tcp forwardOutcome, needed bool) Check {
	c := Check{Name: "login-forwarding", Status: OK, Found: sshd + " does not refuse TCP forwarding (a direct-tcpip channel to its own address was not administratively prohibited)"}
	if tcp == forwardAllowed {
		return c
	}
	c.Status, c.Found = Warn, sshd+" refuses TCP forwarding (AllowTcpForwarding no or DisableForwarding yes): a direct-tcpip channel was administratively prohibited"
	if needed {
		c.Status = Fail
	}
	c.Fix = "set Network.SSH.Reverse.NodeExec: srun with Reverse.Sshd: userspace (the reverse tunnel then rides srun sessions on the login node and needs no forwarding there), " +
		"or have the site set AllowTcpForwarding yes on the login node; the shadows' forward tunnel (ShadowMode: ssh) and kubectl port-forward need it"
	return c
}

// nodeForwardingCheck asks the compute node's sshd for a direct-tcpip
// channel to its own address; stream is what it answered to the stream-local
// check's unix-socket forward.
func nodeForwardingCheck(node *ssh.Client, host string, stream forwardOutcome, c *config.Config) Check {
	r := c.Network.SSH.Reverse
	needed := r.Enabled && r.Sshd == "node"
	tcp := tryDirectTCPIP(node, net.JoinHostPort(host, "22"))
	return decideNodeForwarding(describeBanner(host+"'s sshd", node), tcp, stream, needed)
}

func decideNodeForwarding(sshd string, tcp, stream forwardOutcome, needed bool) Check {
	c := Check{Name: "node-forwarding", Status: OK}
	var refused []string
	var why string
	switch {
	case tcp == forwardRefused && stream == forwardRefused:
		refused, why = []string{"TCP", "unix-socket"}, "DisableForwarding yes, or AllowTcpForwarding no with AllowStreamLocalForwarding no"
	case tcp == forwardRefused:
		refused, why = []string{"TCP"}, "AllowTcpForwarding no"
	case stream == forwardRefused:
		refused, why = []string{"unix-socket"}, "AllowStreamLocalForwarding no"
	}
	if len(refused) == 0 {
		c.Found = sshd + " does not refuse TCP forwarding"
		if stream == forwardAllowed {
			c.Found += " nor unix-socket forwarding"
		}
		return c
	}
	c.Status, c.Found = Warn, sshd+" refuses "+strings.Join(refused, " and ")+" forwarding ("+why+")"
	if needed {
		c.Status = Fail
	}
	c.Fix = "set Network.SSH.Reverse.Sshd: userspace: sluice then runs its own sshd as the site account for each session, which forwards whatever the node's sshd refuses; " +
		"with Reverse.NodeExec: srun as well where ssh to the nodes is refused"
	return c
}
