//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keytabSecret is the Secret holding alice's keytab for the shadows.
const keytabSecret = "hpc-keytab"

// TestKerberosShadow offloads a pod with forward and reverse tunnels on a
// node with Network.SSH.Auth kerberos: the shadow's tunnels log in with
// alice's keytab from the Secret KeytabSecret (copied into the shadow
// namespace), given no key; both tunnels carry; the login sshd logged
// gssapi-with-mic logins and no key login meanwhile, and the compute node's
// sshd, which only the tunnels reach, logged gssapi-with-mic logins too.
//
//	flock /tmp/sluice-rig.lock go test -tags e2e -run TestKerberosShadow ./test/e2e/
func TestKerberosShadow(t *testing.T) {
	rig := kerberosRig(t)
	logs := filepath.Join(rig.Get(t, "RIG_DIR"), "logs")
	loginLog, nodeLog := filepath.Join(logs, "sshd-login.log"), filepath.Join(logs, "sshd-node.log")
	loginBefore, nodeBefore := gssapiLogins(t, loginLog), gssapiLogins(t, nodeLog)
	keysBefore := sshdLogins(t, loginLog, "publickey")

	keys := kerberosKeys(t, rig, rig.Get(t, "RIG_KRB5_PRINCIPAL")) + "    KeytabSecret: " + keytabSecret + "\n"
	e := newTunnelEnv(t, tunnelOpts{ssh: keys})
	keytab, err := os.ReadFile(rig.Get(t, "RIG_KRB5_KEYTAB"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: keytabSecret}, Data: map[string][]byte{"keytab": keytab}}
	if _, err := e.client.CoreV1().Secrets(e.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}

	shadowNS := e.ns + shadow.ShadowSuffix
	created, _ := e.runTunnels(shadowNS)

	// the shadow's tunnels were given the keytab, and no key
	d, err := e.client.AppsV1().Deployments(shadowNS).Get(ctx, shadow.Name(created), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := d.Spec.Template.Spec
	for _, c := range ps.Containers {
		if !slices.Contains(c.Args, "--keytab=/etc/sluice/krb5/keytab") || slices.ContainsFunc(c.Args, func(a string) bool {
			return strings.HasPrefix(a, "--key=")
		}) {
			t.Errorf("container %s args %v; want --keytab and no --key", c.Name, c.Args)
		}
	}
	for _, v := range ps.Volumes {
		if v.Secret != nil && v.Secret.SecretName == keySecret {
			t.Errorf("volume %s mounts the key Secret %s", v.Name, keySecret)
		}
	}

	loginAfter, nodeAfter := gssapiLogins(t, loginLog), gssapiLogins(t, nodeLog)
	keysAfter := sshdLogins(t, loginLog, "publickey")
	t.Logf("gssapi-with-mic logins: login sshd %d, node sshd %d; key logins on the login sshd %d",
		loginAfter-loginBefore, nodeAfter-nodeBefore, keysAfter-keysBefore)
	if nodeAfter-nodeBefore < 2 {
		t.Errorf("the node sshd logged %d gssapi-with-mic logins; want one per tunnel at least (2)", nodeAfter-nodeBefore)
	}
	if loginAfter <= loginBefore {
		t.Errorf("the login sshd logged no gssapi-with-mic login")
	}
	if keysAfter != keysBefore {
		t.Errorf("the login sshd logged %d key logins for alice; want none, every connection uses Kerberos", keysAfter-keysBefore)
	}
}
