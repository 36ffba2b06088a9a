//go:build rig

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestGatewayServeRig runs `sluice-tunnel gateway`, the real binary, with
// the rig's site access and the real TokenReview authenticator against the
// rig's API server. A shadow made by internal/shadow's Manager with the
// gateway on (its pod made by the real controllers) gets a pod-bound token
// from the TokenRequest API, and a forward tunnel with --gateway and that
// token carries bytes to the job's listener on the node; another pod's
// port is not carried, nor is a token of another audience accepted.
func TestGatewayServeRig(t *testing.T) {
	r := testrig.Load(t)
	c := r.Kube(t)
	ctx := context.Background()
	sfx := rigSuffix()
	credNS, podNS := "gwwire-cred-"+sfx, "gwwire-"+sfx
	testrig.MakeNamespace(t, c, credNS)
	testrig.DeleteNamespaceAtEnd(t, c, podNS+shadow.ShadowSuffix)

	// The gateway's host key, and the ConfigMap that pins it for shadows.
	gwAddr := net.JoinHostPort("127.0.0.2", strconv.Itoa(holdPort(t)))
	hostKey, knownHostsLine := writeHostKey(t, gwAddr)
	hosts := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: credNS, Name: "sluice-gateway-host-keys"},
		Data: map[string]string{"known_hosts": knownHostsLine}}
	if _, err := c.CoreV1().ConfigMaps(credNS).Create(ctx, hosts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	node := r.Get(t, "RIG_NODE_NAME")
	port := portPair(t)
	startNodeEcho(t, r, port)
	// The site's fields are checked even with the gateway on, though the
	// shadow uses none of them.
	spec := shadow.Spec{
		LoginHost: "10.251.1.2", LoginPort: 2222, User: "alice",
		KeySecret: "hpc-ssh-key", LoginHostKeys: "hpc-known-hosts", NodeHostKeys: "hpc-node-keys",
		NodeName: "rig-gwwire-" + sfx, CredentialsNamespace: credNS,
		TunnelImage: r.Get(t, "RIG_K8S_BUSYBOX_IMAGE"), ForwardTarget: "node", SocketDirRoot: "/tmp/sluice-sock",
		GatewayAddress: gwAddr, GatewayHostKeys: hosts.Name,
	}
	m := &shadow.Manager{Client: c, Spec: spec, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "web", UID: types.UID("8d2e3f40-5b6c-4d7e-8f90-" + sfx + "000001")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}}}},
	}
	if _, err := m.Ensure(ctx, web); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if err := m.SetNode(ctx, web, node, "4242", "/tmp/sluice-sock/p-"+sfx); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	webShadow := waitShadow(t, c, podNS+shadow.ShadowSuffix, shadow.Name(web))

	tmp := t.TempDir()
	metricsAddr := net.JoinHostPort("127.0.0.2", strconv.Itoa(holdPort(t)))
	gw := startTunnel(t, modeGateway,
		"--login="+net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")),
		"--user="+r.Get(t, "RIG_USER"), "--key="+r.Get(t, "RIG_KEY"),
		"--login-known-hosts="+r.Get(t, "RIG_KNOWN_HOSTS"), "--node-known-hosts="+r.Get(t, "RIG_NODE_KNOWN_HOSTS"),
		"--host-key="+hostKey, "--listen="+gwAddr, "--metrics="+metricsAddr,
		"--kubeconfig="+r.Get(t, "RIG_KUBECONFIG"), "--node="+spec.NodeName, "--credentials-namespace="+credNS)
	waitFor(t, 10*time.Second, "the gateway listening", func() bool { return gw.count("gateway listening", nil) == 1 })
	if body, code := get("http://" + metricsAddr + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q; want 200 ok", code, body)
	}
	if v := metric(t, "http://"+metricsAddr+"/metrics", "process_resident_memory_bytes"); v <= 0 {
		t.Errorf("process_resident_memory_bytes %v; want the gateway's memory", v)
	}

	// The shadow's files, as its pod mounts them.
	knownHosts := filepath.Join(tmp, "known_hosts")
	token := filepath.Join(tmp, "token")
	writeFile(t, knownHosts, knownHostsLine)
	writeFile(t, token, testrig.PodToken(t, c, webShadow, gateway.Audience))
	client := func(token string, ports ...int) []string {
		args := []string{"--gateway=" + gwAddr, "--gateway-known-hosts=" + knownHosts, "--gateway-token=" + token,
			"--node-file=" + writeNodeFile(t, node), "--listen=127.0.0.2"}
		for _, p := range ports {
			args = append(args, "--ports="+strconv.Itoa(p))
		}
		return args
	}
	fwd := startTunnel(t, modeForward, client(token, port)...)
	waitFor(t, 10*time.Second, "the forward listening", func() bool { return fwd.count("forward listening", nil) == 1 })
	echo(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(port)), randomBytes(256<<10))
	if n := gw.count("shadow refused", nil); n != 0 {
		t.Errorf("the gateway refused the shadow %d times", n)
	}
	fwd.stop()

	// The same shadow asking for a port its pod does not declare, and a
	// token of the shadow for another audience: nothing is carried.
	other := portPair(t)
	startNodeEcho(t, r, other)
	fwd = startTunnel(t, modeForward, client(token, other)...)
	waitFor(t, 10*time.Second, "the forward listening", func() bool { return fwd.count("forward listening", nil) == 1 })
	refusedEcho(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(other)))
	waitFor(t, 10*time.Second, "the gateway refusing the port", func() bool {
		return gw.count("refused", map[string]string{"error": "direct-tcpip", "pod": "web"}) > 0
	})
	fwd.stop()
	wrong := filepath.Join(tmp, "wrong-token")
	writeFile(t, wrong, testrig.PodToken(t, c, webShadow, "https://kubernetes.default.svc.cluster.local"))
	fwd = startTunnel(t, modeForward, client(wrong, port)...)
	waitFor(t, 10*time.Second, "the forward listening", func() bool { return fwd.count("forward listening", nil) == 1 })
	refusedEcho(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	waitFor(t, 10*time.Second, "the gateway refusing the token", func() bool {
		return gw.count("shadow refused", map[string]string{"error": "audience"}) > 0
	})
	fwd.stop()

	if errs := gw.linesAt("ERROR"); len(errs) > 0 {
		t.Errorf("the gateway logged errors: %v", errs)
	}
	gw.stopLogging("gateway stopped")
}

// writeHostKey writes a fresh ed25519 host key (0600) and returns its file
// and the known_hosts line pinning it at addr.
func writeHostKey(t *testing.T, addr string) (file, line string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "host_key")
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, knownhosts.Line([]string{addr}, signer.PublicKey()) + "\n"
}

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// refusedEcho checks that a connection to addr carries nothing back: the
// tunnel accepts it, and closes it once the gateway refuses.
func refusedEcho(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	conn.Write([]byte("ping\n"))
	if got, _ := io.ReadAll(conn); len(got) > 0 {
		t.Errorf("%s answered %q; want nothing carried", addr, got)
	}
}

// waitShadow waits for the controllers to make a pod of shadow name in ns
// and its ServiceAccount, whose token it carries, and returns the pod.
func waitShadow(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	sel := labels.Set{shadow.LabelShadow: name}.AsSelector().String()
	waitFor(t, 60*time.Second, fmt.Sprintf("a pod of shadow %s/%s", ns, name), func() bool {
		list, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		pod = &list.Items[0]
		_, err = c.CoreV1().ServiceAccounts(ns).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
	return pod
}

// rigSuffix makes the test's names its own on a rig shared with others.
func rigSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}
