//go:build rig

package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

func runOn(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	out, err := sshxtest.Run(t, c, cmd)
	if err != nil {
		t.Logf("%s: %v", cmd, err) // klist without a ticket exits 1
	}
	return out
}

// TestRigKerberosHop: the tunnel's hop with --keytab and no key logs in to
// the login node and through it to the compute node's sshd with Kerberos.
// A reverse tunnel carried by srun delegates the TGT on the login hop only
// (klist there lists it; on the node it finds none); a forward tunnel
// delegates nowhere.
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigKerberosHop ./cmd/sluice-tunnel/
func TestRigKerberosHop(t *testing.T) {
	r := testrig.Load(t)
	if _, ok := r.Lookup("RIG_KRB5_REALM"); !ok {
		testrig.Unavailable(t, "the rig has no KDC (hack/rig/rig.sh start kdc)")
	}
	realm := r.Get(t, "RIG_KRB5_REALM")
	tgt := "krbtgt/" + realm + "@" + realm
	nodeFile := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(nodeFile, []byte(r.Get(t, "RIG_NODE_NAME")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, nodeExec string
		loginTicket    bool
	}{{modeReverse, tunnel.NodeExecSrun, true}, {modeForward, "", false}} {
		t.Run(tc.mode+"-"+tc.nodeExec, func(t *testing.T) {
			c := &config{
				mode: tc.mode, nodeExec: tc.nodeExec,
				login: net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")), user: r.Get(t, "RIG_USER"),
				kerberos: kerberosFlags{keytab: r.Get(t, "RIG_KRB5_KEYTAB"), principal: r.Get(t, "RIG_KRB5_PRINCIPAL"),
					realm: realm, kdcs: r.Get(t, "RIG_KRB5_KDC")},
				loginKnownHosts: r.Get(t, "RIG_KNOWN_HOSTS"), nodeKnownHosts: r.Get(t, "RIG_NODE_KNOWN_HOSTS"),
				nodeFile: nodeFile, nodePort: 22,
			}
			hop, err := loadHop(c, slog.Default())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			login, err := hop.Login(ctx)
			if err != nil {
				t.Fatalf("login hop: %v", err)
			}
			defer login.Close()
			node, err := hop.Node(ctx, login, r.Get(t, "RIG_NODE_NAME"))
			if err != nil {
				t.Fatalf("node hop: %v", err)
			}
			defer node.Close()
			if got := runOn(t, login, "klist 2>&1"); strings.Contains(got, tgt) != tc.loginTicket {
				t.Errorf("klist on the login node: got\n%s\nwant the TGT %v", got, tc.loginTicket)
			}
			if got := runOn(t, node, "klist 2>&1"); strings.Contains(got, tgt) || !strings.Contains(got, "No credentials cache found") {
				t.Errorf("klist on the node: got\n%s\nwant no ticket", got)
			}
		})
	}
}
