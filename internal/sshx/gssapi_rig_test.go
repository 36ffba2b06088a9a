//go:build rig

package sshx

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/krb"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
)

// rigKerberos returns alice's ticket source from the rig's KDC (realm and
// KDC address from rig.env, her keytab) and the login node's address.
func rigKerberos(t testing.TB) (*testrig.Rig, *krb.Source, string) {
	t.Helper()
	r := testrig.Load(t)
	if _, ok := r.Lookup("RIG_KRB5_REALM"); !ok {
		testrig.Unavailable(t, "the rig has no KDC (hack/rig/rig.sh start kdc)")
	}
	cfg, err := krb.NewConfig(r.Get(t, "RIG_KRB5_REALM"), []string{r.Get(t, "RIG_KRB5_KDC")})
	if err != nil {
		t.Fatal(err)
	}
	src := &krb.Source{KeytabFile: r.Get(t, "RIG_KRB5_KEYTAB"), Principal: r.Get(t, "RIG_KRB5_PRINCIPAL"), Config: cfg}
	return r, src, r.Get(t, "RIG_LOGIN_ADDR")
}

// dialKerberos logs in to the login node as alice with Kerberos only.
func dialKerberos(t *testing.T, r *testrig.Rig, src *krb.Source, host string, delegate bool) *ssh.Client {
	t.Helper()
	hosts, err := HostKeys(r.Get(t, "RIG_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(host, r.Get(t, "RIG_LOGIN_PORT"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, dialer(), addr, &ssh.ClientConfig{
		User: r.Get(t, "RIG_USER"), Auth: []ssh.AuthMethod{KerberosAuth(src, host, delegate)},
		HostKeyCallback: hosts, HostKeyAlgorithms: HostKeyAlgorithms(hosts, addr),
	})
	if err != nil {
		t.Fatalf("kerberos login (delegate %v): %v", delegate, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRigKerberosLogin: alice logs in to the real login sshd with
// gssapi-with-mic and a ticket from her keytab. With delegation, klist in
// the session lists her forwarded TGT; without it, klist finds no ticket.
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigKerberos ./internal/sshx/
func TestRigKerberosLogin(t *testing.T) {
	r, src, host := rigKerberos(t)
	principal, realm := r.Get(t, "RIG_KRB5_PRINCIPAL"), r.Get(t, "RIG_KRB5_REALM")

	c := dialKerberos(t, r, src, host, true)
	out, err := sshxtest.Run(t, c, "echo KRB5CCNAME=$KRB5CCNAME; klist -f")
	if err != nil {
		t.Fatalf("klist with delegation: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Default principal: "+principal) || !strings.Contains(out, "krbtgt/"+realm+"@"+realm) {
		t.Fatalf("klist with delegation: got\n%s\nwant %s's TGT", out, principal)
	}
	t.Logf("delegated:\n%s", out)

	c = dialKerberos(t, r, src, host, false)
	out, err = sshxtest.Run(t, c, "klist")
	if err == nil || strings.Contains(out, "krbtgt/") {
		t.Fatalf("klist without delegation: got err %v and\n%s\nwant no ticket", err, out)
	}
}
