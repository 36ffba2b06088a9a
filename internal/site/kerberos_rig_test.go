//go:build rig

package site

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/krb"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// kerberosConfig is the virtual kubelet's configuration for the rig with
// Auth kerberos: alice's keytab, the rig's realm and KDC, and nodeExec as
// Reverse.NodeExec (which decides the delegation).
func kerberosConfig(t *testing.T, r *testrig.Rig, nodeExec string) *config.Config {
	t.Helper()
	if _, ok := r.Lookup("RIG_KRB5_REALM"); !ok {
		testrig.Unavailable(t, "the rig has no KDC (hack/rig/rig.sh start kdc)")
	}
	src := fmt.Sprintf(`NodeName: rig-krb
Site:
  DataRoot: %s
  ContainerRuntime: none
Network:
  SSH:
    LoginHost: %s
    Port: %s
    User: %s
    Auth: kerberos
    Principal: %s
    KeytabFile: %s
    Realm: %s
    KDCs: [%q]
    KnownHostsFile: %s
    Reverse:
      NodeExec: %s
`, r.Get(t, "RIG_DATA_ROOT"), r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT"), r.Get(t, "RIG_USER"),
		r.Get(t, "RIG_KRB5_PRINCIPAL"), r.Get(t, "RIG_KRB5_KEYTAB"), r.Get(t, "RIG_KRB5_REALM"), r.Get(t, "RIG_KRB5_KDC"),
		r.Get(t, "RIG_KNOWN_HOSTS"), nodeExec)
	c, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return c
}

// TestRigKerberosRunner: the virtual kubelet's runner logs in with
// Kerberos only. With Reverse.NodeExec srun the TGT is delegated on the
// login hop: klist on the login node and in an srun step on the compute
// node lists alice's TGT. With NodeExec ssh nothing is delegated: klist
// finds no ticket, on the login node or in the step.
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigKerberos ./internal/site/
func TestRigKerberosRunner(t *testing.T) {
	r := testrig.Load(t)
	realm := r.Get(t, "RIG_KRB5_REALM")
	tgt := "krbtgt/" + realm + "@" + realm
	for _, tc := range []struct {
		nodeExec  string
		delegated bool
	}{{"srun", true}, {"ssh", false}} {
		t.Run(tc.nodeExec, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			run, err := Open(kerberosConfig(t, r, tc.nodeExec), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer run.(interface{ Close() error }).Close()
			// stderr, which may come after the exit status, is not relied on
			login, loginErr := run.Run(ctx, nil, "sh", "-c", "klist 2>&1; echo rc=$?")
			// --immediate: a node that cannot take the step fails it
			// rather than leaving it pending
			step, stepErr := run.Run(ctx, nil, "srun", "--immediate=20", "-N1", "-n1", "-t", "1", "sh", "-c", "klist 2>&1; echo rc=$?")
			for _, got := range []struct {
				where string
				out   []byte
				err   error
			}{{"login node", login, loginErr}, {"srun step", step, stepErr}} {
				out := string(got.out)
				if got.err != nil {
					t.Fatalf("%s: %v\n%s", got.where, got.err, out)
				}
				has := strings.Contains(out, tgt)
				if has != tc.delegated || (!has && !strings.Contains(out, "No credentials cache found")) {
					t.Errorf("%s: klist got %v\n%s\nwant the TGT %v", got.where, got.err, out, tc.delegated)
				}
			}
			t.Logf("srun step:\n%s", step)
		})
	}
}

// TestRigKerberosFailures: a principal the KDC does not know, and a keytab
// whose key is not the principal's, fail the login with the reason.
func TestRigKerberosFailures(t *testing.T) {
	r := testrig.Load(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, principal, keytab string
		want                    krb.Reason
	}{
		{"unknown principal", "nobody", r.Get(t, "RIG_KRB5_KEYTAB"), krb.ReasonWrongPrincipal},
		// bob's keytab holds no key of alice's
		{"wrong keytab", r.Get(t, "RIG_KRB5_PRINCIPAL"), strings.Replace(r.Get(t, "RIG_KRB5_KEYTAB"), "alice", "bob", 1), krb.ReasonWrongKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kerberosConfig(t, r, "ssh")
			c.Network.SSH.Principal, c.Network.SSH.KeytabFile = tc.principal, tc.keytab
			run, err := Open(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer run.(interface{ Close() error }).Close()
			_, err = run.Run(ctx, nil, "true")
			if krb.ReasonOf(err) != tc.want {
				t.Fatalf("got %v (reason %q); want reason %s", err, krb.ReasonOf(err), tc.want)
			}
			t.Logf("%v", err)
		})
	}
}
