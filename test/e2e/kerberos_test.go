//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKerberosPod offloads a pod with Network.SSH.Auth kerberos: sluice-vk
// logs in to the login node with gssapi-with-mic and alice's keytab from
// the rig's KDC (its key file is in the configuration too, and unused), the
// pod's job runs and its logs come back, and the login sshd logged
// Kerberos logins for alice.
//
//	flock /tmp/sluice-rig.lock go test -tags e2e -run TestKerberosPod ./test/e2e/
func TestKerberosPod(t *testing.T) {
	parallel(t)
	rig := kerberosRig(t)
	sshdLog := filepath.Join(rig.Get(t, "RIG_DIR"), "logs", "sshd-login.log")
	before := gssapiLogins(t, sshdLog)
	e := newEnvWith(t, kerberosKeys(t, rig, rig.Get(t, "RIG_KRB5_PRINCIPAL")), nil)
	e.create(e.pod("krb", "echo hello from kerberos"))
	e.waitPod("krb", "Succeeded", 90*time.Second, phaseIs(corev1.PodSucceeded))
	if got, want := e.logs("krb", corev1.PodLogOptions{}), []string{"hello from kerberos"}; !slices.Equal(got, want) {
		t.Errorf("logs: got %q; want %q", got, want)
	}
	if after := gssapiLogins(t, sshdLog); after <= before {
		t.Errorf("the login sshd logged %d gssapi-with-mic logins before and %d after; want more", before, after)
	}
}

// gssapiLogins counts the Kerberos logins of alice in an sshd's log.
func gssapiLogins(t *testing.T, file string) int {
	t.Helper()
	return sshdLogins(t, file, "gssapi-with-mic")
}

// sshdLogins counts alice's logins by method in an sshd's log.
func sshdLogins(t *testing.T, file, method string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("sshd log: %v", err)
	}
	return strings.Count(string(b), "Accepted "+method+" for alice ")
}

func kerberosRig(t *testing.T) *testrig.Rig {
	t.Helper()
	rig := testrig.Load(t)
	if _, ok := rig.Lookup("RIG_KRB5_REALM"); !ok {
		testrig.Unavailable(t, "the rig has no KDC (hack/rig/rig.sh start kdc)")
	}
	return rig
}

// kerberosKeys are the Network.SSH keys of Auth kerberos for principal,
// with alice's keytab and the rig's realm and KDC.
func kerberosKeys(t *testing.T, rig *testrig.Rig, principal string) string {
	t.Helper()
	return fmt.Sprintf("    Auth: kerberos\n    Principal: %s\n    KeytabFile: %s\n    Realm: %s\n    KDCs: [%q]\n",
		principal, rig.Get(t, "RIG_KRB5_KEYTAB"), rig.Get(t, "RIG_KRB5_REALM"), rig.Get(t, "RIG_KRB5_KDC"))
}

// TestKerberosWrongPrincipal: a principal the KDC does not know leaves the
// node with SiteReachable False, reason KerberosWrongPrincipal, and a
// Warning Event on the node saying so.
//
//	flock /tmp/sluice-rig.lock go test -tags e2e -run TestKerberosWrongPrincipal ./test/e2e/
func TestKerberosWrongPrincipal(t *testing.T) {
	parallel(t)
	rig := kerberosRig(t)
	good := rig.Get(t, "RIG_KRB5_PRINCIPAL")
	e := newEnvWith(t, kerberosKeys(t, rig, good), nil)
	// restarted with a principal the KDC does not know (a node that never
	// reached its site would not become Ready for newEnvWith)
	e.vk.stop(t)
	cfg, err := os.ReadFile(e.cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.cfgFile, []byte(strings.Replace(string(cfg), "Principal: "+good, "Principal: nobody", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.vk = e.startVK()
	ctx := context.Background()
	var reason string
	e.waitFor("SiteReachable False with a Kerberos reason", 60*time.Second, func() bool {
		n, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == "SiteReachable" {
				reason = c.Reason
				return c.Status == corev1.ConditionFalse && c.Reason == "KerberosWrongPrincipal"
			}
		}
		return false
	})
	e.waitFor("the node's Warning Event KerberosWrongPrincipal", 30*time.Second, func() bool {
		evs, err := e.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + e.node + ",reason=KerberosWrongPrincipal"})
		return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "principal unknown to the KDC")
	})
	t.Logf("SiteReachable reason %s", reason)
}
