//go:build rig

package main

import (
	"context"
	"crypto/rand"
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
	port := portPair(t)
	startNodeEcho(t, r, port)
	g := startRigGateway(t, r, "gwwire", "4242", port)
	gw := g.proc
	if body, code := get("http://" + g.metrics + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q; want 200 ok", code, body)
	}
	if v := metric(t, "http://"+g.metrics+"/metrics", "process_resident_memory_bytes"); v <= 0 {
		t.Errorf("process_resident_memory_bytes %v; want the gateway's memory", v)
	}

	token := g.token(t, gateway.Audience)
	fwd := startTunnel(t, modeForward, g.shadowArgs(t, token, port)...)
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
	fwd = startTunnel(t, modeForward, g.shadowArgs(t, token, other)...)
	waitFor(t, 10*time.Second, "the forward listening", func() bool { return fwd.count("forward listening", nil) == 1 })
	refusedEcho(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(other)))
	waitFor(t, 10*time.Second, "the gateway refusing the port", func() bool {
		return gw.count("refused", map[string]string{"error": "direct-tcpip", "pod": "web"}) > 0
	})
	fwd.stop()
	wrong := g.token(t, "https://kubernetes.default.svc.cluster.local")
	fwd = startTunnel(t, modeForward, g.shadowArgs(t, wrong, port)...)
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

// rigGateway is `sluice-tunnel gateway`, the real binary, run with the
// rig's site access and the real TokenReview authenticator against the
// rig's API server, for a virtual node with one offloaded pod, web: its
// shadow made by internal/shadow's Manager with the gateway on (its pod
// made by the real controllers), its job recorded on the rig's node.
type rigGateway struct {
	proc       *tunnelProc
	addr       string // the gateway's SSH server
	metrics    string
	knownHosts string // pinning its host key, as the shadow's mount has it
	client     kubernetes.Interface
	manager    *shadow.Manager
	web        *corev1.Pod
	shadow     *corev1.Pod
	node       string
	socketDir  string // web's, on the node
}

// startRigGateway starts a gateway for a pod web that declares port, its
// job recorded as job on the rig's node; prefix names the test's
// namespaces.
func startRigGateway(t *testing.T, r *testrig.Rig, prefix, job string, port int) *rigGateway {
	t.Helper()
	c := r.Kube(t)
	ctx := context.Background()
	sfx := rigSuffix()
	credNS, podNS := prefix+"-cred-"+sfx, prefix+"-"+sfx
	testrig.MakeNamespace(t, c, credNS)
	testrig.DeleteNamespaceAtEnd(t, c, podNS+shadow.ShadowSuffix)

	// The gateway's host key, and the ConfigMap that pins it for shadows.
	g := &rigGateway{client: c, node: r.Get(t, "RIG_NODE_NAME"), socketDir: "/tmp/sluice-sock/p-" + sfx}
	g.addr = net.JoinHostPort("127.0.0.2", strconv.Itoa(holdPort(t)))
	hostKey, knownHostsLine := writeHostKey(t, g.addr)
	hosts := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: credNS, Name: "sluice-gateway-host-keys"},
		Data: map[string]string{"known_hosts": knownHostsLine}}
	if _, err := c.CoreV1().ConfigMaps(credNS).Create(ctx, hosts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.knownHosts = filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, g.knownHosts, knownHostsLine)

	// The site's fields are checked even with the gateway on, though the
	// shadow uses none of them. No SocketDirRoot: the job here is a plain
	// listener on the node's loopback, without the relay whose forward
	// entry a pod's forward goes through where the site has a socket root
	// (internal/gateway's forward_entry_rig_test tests that path).
	spec := shadow.Spec{
		LoginHost: "10.251.1.2", LoginPort: 2222, User: "alice",
		KeySecret: "hpc-ssh-key", LoginHostKeys: "hpc-known-hosts", NodeHostKeys: "hpc-node-keys",
		NodeName: "rig-" + prefix + "-" + sfx, CredentialsNamespace: credNS,
		TunnelImage: r.Get(t, "RIG_K8S_BUSYBOX_IMAGE"), ForwardTarget: "node",
		GatewayAddress: g.addr, GatewayHostKeys: hosts.Name,
	}
	g.manager = &shadow.Manager{Client: c, Spec: spec, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	g.web = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "web", UID: types.UID("8d2e3f40-5b6c-4d7e-8f90-" + sfx + "000001")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}}}},
	}
	if _, err := g.manager.Ensure(ctx, g.web); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	g.setNode(t, g.node, job)
	g.shadow = waitShadow(t, c, podNS+shadow.ShadowSuffix, shadow.Name(g.web))

	g.metrics = net.JoinHostPort("127.0.0.2", strconv.Itoa(holdPort(t)))
	g.proc = startTunnel(t, modeGateway,
		"--login="+net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")),
		"--user="+r.Get(t, "RIG_USER"), "--key="+r.Get(t, "RIG_KEY"),
		"--login-known-hosts="+r.Get(t, "RIG_KNOWN_HOSTS"), "--node-known-hosts="+r.Get(t, "RIG_NODE_KNOWN_HOSTS"),
		"--host-key="+hostKey, "--listen="+g.addr, "--metrics="+g.metrics,
		"--kubeconfig="+r.Get(t, "RIG_KUBECONFIG"), "--node="+spec.NodeName, "--credentials-namespace="+credNS)
	waitFor(t, 10*time.Second, "the gateway listening", func() bool { return g.proc.count("gateway listening", nil) == 1 })
	return g
}

// setNode records web's job on node, as sluice-vk does when it learns
// where the job runs.
func (g *rigGateway) setNode(t *testing.T, node, job string) {
	t.Helper()
	if err := g.manager.SetNode(context.Background(), g.web, node, job, g.socketDir); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
}

// token writes a token of web's shadow pod for audience to a file, as the
// kubelet projects it, and returns the file.
func (g *rigGateway) token(t *testing.T, audience string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	writeFile(t, file, testrig.PodToken(t, g.client, g.shadow, audience))
	return file
}

// shadowArgs are the arguments of a forward shadow of web through the
// gateway with token, listening on 127.0.0.2 for ports.
func (g *rigGateway) shadowArgs(t *testing.T, token string, ports ...int) []string {
	args := []string{"--gateway=" + g.addr, "--gateway-known-hosts=" + g.knownHosts, "--gateway-token=" + token,
		"--node-file=" + writeNodeFile(t, g.node), "--listen=127.0.0.2"}
	for _, p := range ports {
		args = append(args, "--ports="+strconv.Itoa(p))
	}
	return args
}

// writeHostKey writes a fresh ed25519 host key (0600) and returns its file
// and the known_hosts line pinning it at addr.
func writeHostKey(t *testing.T, addr string) (file, line string) {
	t.Helper()
	key, signer := newKeyPEM(t)
	file = filepath.Join(t.TempDir(), "host_key")
	if err := os.WriteFile(file, key, 0o600); err != nil {
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
