//go:build rig

package main

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestForwardBastionRig runs a forward through the rig's bastion
// (sshd-bastion): the login node is reached only as a channel of the
// bastion connection, each hop's host key checked, and the bytes come
// back from the job's port on the node.
func TestForwardBastionRig(t *testing.T) {
	r := testrig.Load(t)
	bastion, ok := r.Lookup("RIG_BASTION_ADDR")
	if !ok {
		testrig.Unavailable(t, "the rig has no bastion (hack/rig/rig.sh start sshd-bastion)")
	}
	port := portPair(t)
	startNodeEcho(t, r, port)
	nodeFile := writeNodeFile(t, r.Get(t, "RIG_NODE_NAME"))

	p := startTunnel(t, "forward", append(siteArgs(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), nodeFile),
		"--bastion="+net.JoinHostPort(bastion, r.Get(t, "RIG_BASTION_PORT")),
		"--bastion-known-hosts="+r.Get(t, "RIG_BASTION_KNOWN_HOSTS"),
		"--reconnect-spread=10ms",
		"--target=node", "--ports="+strconv.Itoa(port), "--listen=127.0.0.2")...)
	waitFor(t, 10*time.Second, "the forward listening and connected", func() bool {
		return p.count("forward listening", nil) == 1 && p.count("ssh connected", map[string]string{"hop": "node"}) == 1
	})
	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))
	echo(t, addr, []byte("hello through the bastion\n"))
	echo(t, addr, randomBytes(256<<10))
	if errs := p.linesAt("ERROR"); len(errs) > 0 {
		t.Errorf("error lines logged: %v", errs)
	}
	p.stop()
}

// TestForwardBastionWrongKeyRig pins the login node's key for the bastion:
// nothing is reached, and the host key error names the bastion.
func TestForwardBastionWrongKeyRig(t *testing.T) {
	r := testrig.Load(t)
	bastion, ok := r.Lookup("RIG_BASTION_ADDR")
	if !ok {
		testrig.Unavailable(t, "the rig has no bastion (hack/rig/rig.sh start sshd-bastion)")
	}
	port := portPair(t)
	nodeFile := writeNodeFile(t, r.Get(t, "RIG_NODE_NAME"))
	p := startTunnel(t, "forward", append(siteArgs(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), nodeFile),
		"--bastion="+net.JoinHostPort(bastion, r.Get(t, "RIG_BASTION_PORT")),
		// pins 10.251.1.2, not the bastion: the bastion is unknown
		"--bastion-known-hosts="+r.Get(t, "RIG_KNOWN_HOSTS"),
		"--target=node", "--ports="+strconv.Itoa(port), "--listen=127.0.0.2")...)
	waitFor(t, 10*time.Second, "the host key error", func() bool { return len(p.linesAt("ERROR")) > 0 })
	line := p.linesAt("ERROR")[0]
	if host, _ := line["host"].(string); host != net.JoinHostPort(bastion, r.Get(t, "RIG_BASTION_PORT")) {
		t.Errorf("host key error for %q; want the bastion %s: %v", host, bastion, line)
	}
	if p.count("ssh connected", nil) != 0 {
		t.Error("a connection was made past a bastion with an unpinned key")
	}
	p.stop()
}
