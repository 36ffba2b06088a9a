//go:build rig

package shadow

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/rigenv"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// rigTunnelVersion tags the tunnel image this package's rig tests build
// and import: not the e2e tests' tag, whose image they may be using.
const rigTunnelVersion = "v0.0.0-shadow-rig"

// TestRigNodeTunnel runs a forward shadow on the rig's real node (kubelet,
// containerd, runc) from the sluice-tunnel image built from this tree, in
// the namespace sluice creates (enforcing restricted): the pod is admitted,
// its tunnel reads the key as uid 65532 — not root — through the fsGroup,
// connects to the compute node and becomes Ready, which the Service needs.
func TestRigNodeTunnel(t *testing.T) {
	c := rigClient(t)
	rig := testrig.Load(t)
	vars, _ := rigenv.Read(rigenv.File())
	if vars["RIG_K8S_NODE"] == "" {
		testrig.Unavailable(t, "the rig has no Kubernetes node (RIG_K8S_NODE missing from rig.env)")
	}
	image := importRigTunnelImage(t, rig.Get(t, "RIG_K8S_CONTAINERD_SOCK"))
	ctx := context.Background()
	sfx, podNS, credNS := rigNamespaces(t, c, "shadow-node")
	rigCredentials(t, c, rig, credNS)

	port, err := strconv.Atoi(rig.Get(t, "RIG_LOGIN_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{
		NodeName:             "rig-node-tunnel-" + sfx,
		LoginHost:            rig.Get(t, "RIG_LOGIN_ADDR"),
		LoginPort:            port,
		User:                 rig.Get(t, "RIG_USER"),
		KeySecret:            "hpc-ssh-key",
		LoginHostKeys:        "hpc-known-hosts",
		NodeHostKeys:         "hpc-node-keys",
		ForwardTarget:        "node",
		TunnelImage:          image,
		ReplicateCredentials: true,
		CredentialsNamespace: credNS,
	}
	m := rigManager(t, c, s)
	// A port of its own, to find this tunnel's process among the node's.
	jobPort := strconv.Itoa(20000 + rand.IntN(10000))
	pod := testPod(podNS, "web", withUID("7a2b3c4d-5e6f-4a7b-8c9d-"+sfx+"000000"), withPorts(jobPort))
	ref, err := m.Ensure(ctx, pod)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Delete(context.Background(), pod); err != nil {
			t.Errorf("Delete: %v", err)
		}
	})
	if err := m.SetNode(ctx, pod, rig.Get(t, "RIG_NODE_NAME"), "", ""); err != nil {
		t.Fatalf("SetNode: %v", err)
	}

	var sp *corev1.Pod
	eventually(t, 2*time.Minute, "shadow pod Ready on the node", func() (bool, error) {
		p, err := m.ShadowPod(ctx, pod)
		if err != nil || p == nil {
			return false, err
		}
		sp = p
		// The offloaded pod is Ready, as sluice-vk tells the shadow pod's
		// readiness gate: the tunnel's own readiness is left to decide.
		if OffloadedReady(p) != corev1.ConditionTrue {
			if err := m.SetOffloadedReady(ctx, p, true, time.Now()); err != nil {
				return false, err
			}
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				return cond.Status == corev1.ConditionTrue, fmt.Errorf("phase %s, %s %s: %s", p.Status.Phase, cond.Type, cond.Status, cond.Message)
			}
		}
		return false, fmt.Errorf("phase %s, no Ready condition", p.Status.Phase)
	})
	t.Logf("shadow pod %s/%s on %s, IP %s", sp.Namespace, sp.Name, sp.Spec.NodeName, sp.Status.PodIP)
	for _, cs := range sp.Status.ContainerStatuses {
		if cs.RestartCount != 0 {
			t.Errorf("container %s restarted %d times (liveness, or the key unreadable)", cs.Name, cs.RestartCount)
		}
	}
	snaps, err := m.TunnelStatus(ctx, sp)
	if err != nil || len(snaps) != 1 || snaps[0].State != tunnel.StateUp {
		t.Errorf("tunnel status %+v, %v; want the forward up", snaps, err)
	}

	pid := tunnelProcess(t, "--ports="+jobPort)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532", "Gid:\t65532\t65532\t65532\t65532"} {
		if !strings.Contains(string(status), want+"\n") {
			t.Errorf("tunnel process %d: want %q in\n%s", pid, want, status)
		}
	}
	key := fmt.Sprintf("/proc/%d/root%s/%s", pid, mountSSH, keyPrivate)
	fi, err := os.Stat(key)
	if err != nil {
		t.Fatalf("key in the container: %v", err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o440 || st.Uid != 0 || st.Gid != 65532 {
		t.Errorf("key in the container: mode %04o, owner %d:%d; want 0440, 0:65532", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if _, err := c.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("service: %v", err)
	}
}

// importRigTunnelImage builds the sluice-tunnel image of this tree with
// hack/tools/images, as `make images` does, imports it into the node's
// containerd and returns its name.
func importRigTunnelImage(t *testing.T, sock string) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "run", "./hack/tools/images", "-out", dir, "-images", "sluice-tunnel", "-version", rigTunnelVersion)
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tunnel image: %v\n%s", err, out)
	}
	imp := exec.Command("ctr", "--address", sock, "--namespace", "k8s.io", "images", "import", filepath.Join(dir, "sluice-tunnel.tar"))
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import the tunnel image: %v\n%s", err, out)
	}
	return "ghcr.io/sluice-hpc/sluice-tunnel:" + rigTunnelVersion
}

// rigCredentials stores the rig user's key and the pinned known_hosts in
// ns under the names of testSpec.
func rigCredentials(t *testing.T, c kubernetes.Interface, rig *testrig.Rig, ns string) {
	t.Helper()
	ctx := context.Background()
	read := func(key string) []byte {
		b, err := os.ReadFile(rig.Get(t, key))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hpc-ssh-key"}, Type: corev1.SecretTypeSSHAuth,
		Data: map[string][]byte{keyPrivate: read("RIG_KEY")}}
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	for name, key := range map[string]string{"hpc-known-hosts": "RIG_KNOWN_HOSTS", "hpc-node-keys": "RIG_NODE_KNOWN_HOSTS"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{keyKnownHosts: string(read(key))}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap: %v", err)
		}
	}
}

// tunnelProcess is the pid of the one sluice-tunnel process on this host
// whose arguments include arg.
func tunnelProcess(t *testing.T, arg string) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var found []int
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) == "sluice-tunnel" && slices.Contains(args, arg) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("sluice-tunnel processes with %s: %v; want one", arg, found)
	}
	return found[0]
}
