//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const bastionHostKeys = "hpc-bastion-keys"

// TestShadowThroughBastion is TestShadowForwardAndReverse with the rig's
// bastion (sshd-bastion) before the login node: sluice-vk and the
// shadows' tunnels reach the login node only through it, each hop's host
// key pinned, and both ways carry.
func TestShadowThroughBastion(t *testing.T) {
	rig := testrig.Load(t)
	addr, ok := rig.Lookup("RIG_BASTION_ADDR")
	if !ok {
		testrig.Unavailable(t, "the rig has no bastion (hack/rig/rig.sh start sshd-bastion)")
	}
	bastionLog := filepath.Join(rig.Get(t, "RIG_DIR"), "logs", "sshd-bastion.log")
	before := acceptedBy(t, bastionLog)

	e := newTunnelEnv(t, tunnelOpts{ssh: fmt.Sprintf(`    Bastion:
      Host: %s
      Port: %s
      KnownHostsFile: %s
      HostKeys: %s
`, addr, rig.Get(t, "RIG_BASTION_PORT"), rig.Get(t, "RIG_BASTION_KNOWN_HOSTS"), bastionHostKeys)})
	kh, err := os.ReadFile(rig.Get(t, "RIG_BASTION_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	// Before the first pod: the shadow's namespace gets a copy at Ensure.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bastionHostKeys}, Data: map[string]string{"known_hosts": string(kh)}}
	if _, err := e.client.CoreV1().ConfigMaps(e.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}

	created, _ := e.runTunnels(e.ns + shadow.ShadowSuffix)
	e.waitEvent(created, "ShadowCreated")
	// sluice-vk's connection and the forward's and reverse tunnel's login
	// connections: each one a bastion connection of its own.
	if n := acceptedBy(t, bastionLog) - before; n < 3 {
		t.Errorf("the bastion accepted %d connections during the test; want at least 3 (sluice-vk and both tunnels)", n)
	}
}

// acceptedBy counts the connections an sshd log says it accepted.
func acceptedBy(t *testing.T, log string) int {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("bastion log: %v", err)
	}
	return bytes.Count(data, []byte("Accepted publickey for "))
}
