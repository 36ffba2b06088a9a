//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
)

// TestKerberosPod offloads a pod with Network.SSH.Auth kerberos: sluice-vk
// logs in to the login node with gssapi-with-mic and alice's keytab from
// the rig's KDC (its key file is in the configuration too, and unused), the
// pod's job runs and its logs come back, and the login sshd logged
// Kerberos logins for alice.
//
//	flock /tmp/sluice-rig.lock go test -tags e2e -run TestKerberosPod ./test/e2e/
func TestKerberosPod(t *testing.T) {
	rig := testrig.Load(t)
	if _, ok := rig.Lookup("RIG_KRB5_REALM"); !ok {
		testrig.Unavailable(t, "the rig has no KDC (hack/rig/rig.sh start kdc)")
	}
	sshdLog := filepath.Join(rig.Get(t, "RIG_DIR"), "logs", "sshd-login.log")
	before := gssapiLogins(t, sshdLog)
	e := newEnvWith(t, fmt.Sprintf("    Auth: kerberos\n    Principal: %s\n    KeytabFile: %s\n    Realm: %s\n    KDCs: [%q]\n",
		rig.Get(t, "RIG_KRB5_PRINCIPAL"), rig.Get(t, "RIG_KRB5_KEYTAB"), rig.Get(t, "RIG_KRB5_REALM"), rig.Get(t, "RIG_KRB5_KDC")), nil)
	e.create(e.pod("krb", "echo hello from kerberos"))
	e.waitPod("krb", "Succeeded", 90*time.Second, phaseIs(corev1.PodSucceeded))
	if got, want := e.logs("krb", corev1.PodLogOptions{}), []string{"hello from kerberos"}; !slices.Equal(got, want) {
		t.Errorf("logs: got %q; want %q", got, want)
	}
	if after := gssapiLogins(t, sshdLog); after <= before {
		t.Errorf("the login sshd logged %d gssapi-with-mic logins before and %d after; want more", before, after)
	}
}

// gssapiLogins counts the Kerberos logins of alice in the login sshd's log.
func gssapiLogins(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("sshd log: %v", err)
	}
	return strings.Count(string(b), "Accepted gssapi-with-mic for alice")
}
