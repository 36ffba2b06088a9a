package gatewaytest

import (
	"net"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// RigSite is the rig's site as a gateway holds it: its login node and
// compute nodes, reached as the rig's user with its key, host keys
// pinned. dial, if not nil, opens the connections to the login node.
func RigSite(t testing.TB, r *testrig.Rig, dial sshx.DialFunc) *gateway.Site {
	t.Helper()
	signer, err := sshx.Signer(r.Get(t, "RIG_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	login, err := sshx.HostKeys(r.Get(t, "RIG_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := sshx.HostKeys(r.Get(t, "RIG_NODE_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	return &gateway.Site{Hop: &tunnel.Hop{
		LoginAddr:     net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")),
		User:          r.Get(t, "RIG_USER"),
		Auth:          []ssh.AuthMethod{ssh.PublicKeys(signer)},
		LoginHostKeys: login,
		NodeHostKeys:  node,
		Dial:          dial,
		Timeout:       10 * time.Second,
	}}
}
