//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	binMu sync.Mutex
	bins  = map[string]string{}
)

// buildBin builds a static binary of pkg (relative to the repository) once
// per test binary.
func buildBin(t *testing.T, pkg string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if b, ok := bins[pkg]; ok {
		return b
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir, err := os.MkdirTemp("", "sluice-e2e-bin-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-ldflags", stampVersion, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	bins[pkg] = out
	return out
}

// Credential names of the tunnel's configuration.
const (
	keySecret     = "hpc-ssh-key"
	loginHostKeys = "hpc-known-hosts"
	nodeHostKeys  = "hpc-node-keys"
)

// tunnelOpts change the env newTunnelEnv makes.
type tunnelOpts struct {
	ssh     string // more keys of Network.SSH, indented four spaces
	network string // more keys of Network, indented two spaces; $NAMESPACE is the test's
	reverse string // more keys of Network.SSH.Reverse, indented six spaces
	site    string // more keys of Site, indented two spaces
	// nodeKnownHosts replaces the rig's pinned node host keys in the
	// hpc-node-keys ConfigMap when not empty.
	nodeKnownHosts string
	// rig is the rig's site the node runs against (see eachSite). If
	// nil, the first.
	rig *testrig.Rig
}

// newTunnelEnv is an env whose node makes shadows (forward and reverse),
// with the credentials in its namespace; the rig's node runs the shadow
// pods from the sluice-tunnel image built here.
func newTunnelEnv(t *testing.T, opts ...tunnelOpts) *env {
	t.Helper()
	var o tunnelOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	network := fmt.Sprintf(`    KeySecret: %s
    LoginHostKeys: %s
    NodeHostKeys: %s
    ReplicateCredentials: true
%s    Reverse:
      Enabled: true
%s  EnableTunnel: true
  ShadowMode: ssh
%s`, keySecret, loginHostKeys, nodeHostKeys, o.ssh, o.reverse, o.network)
	relay := buildBin(t, "./cmd/sluice-relay")
	if o.rig == nil {
		o.rig = testrig.Load(t)
	}
	return newEnvOn(t, o.rig, network, func(e *env) {
		e.vkArgs = []string{"--namespace", e.ns, "--relay-binary", relay}
		e.credentials(o.nodeKnownHosts)
		e.importTunnelImage()
		if o.site != "" {
			e.addSiteKeys(o.site)
		}
	})
}

// credentials stores alice's key and the pinned known_hosts in the
// namespace, as a site administrator would; nodeKnownHosts, when not empty,
// replaces the rig's node host keys.
func (e *env) credentials(nodeKnownHosts string) {
	ctx := context.Background()
	read := func(key string) []byte {
		b, err := os.ReadFile(e.rig.Get(e.t, key))
		if err != nil {
			e.t.Fatal(err)
		}
		return b
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: keySecret}, Data: map[string][]byte{"ssh-privatekey": read("RIG_KEY")}}
	if _, err := e.client.CoreV1().Secrets(e.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create secret: %v", err)
	}
	for name, key := range map[string]string{loginHostKeys: "RIG_KNOWN_HOSTS", nodeHostKeys: "RIG_NODE_KNOWN_HOSTS"} {
		data := string(read(key))
		if name == nodeHostKeys && nodeKnownHosts != "" {
			data = nodeKnownHosts
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"known_hosts": data}}
		if _, err := e.client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create configmap: %v", err)
		}
	}
	e.externalRedis()
	e.t.Cleanup(func() {
		_ = e.client.CoreV1().Namespaces().Delete(context.Background(), e.ns+shadow.ShadowSuffix, metav1.DeleteOptions{})
	})
}

// importTunnelImage imports the sluice-tunnel image of the tests' version
// (the one sluice-vk's default names) into the rig node's containerd: the
// shadows run from it.
func (e *env) importTunnelImage() {
	e.t.Helper()
	importImage(e.t, e.rig, "sluice-tunnel")
}

// serviceAddr is host:port of a ClusterIP Service's port: the tests dial it
// from the host, through the node's kube-proxy, as a cluster client would.
func serviceAddr(t *testing.T, svc *corev1.Service, port int) string {
	t.Helper()
	if _, err := netip.ParseAddr(svc.Spec.ClusterIP); err != nil {
		t.Fatalf("service %s/%s: ClusterIP %q: %v", svc.Namespace, svc.Name, svc.Spec.ClusterIP, err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(port))
}

// TestShadowForwardAndReverse: a pod with an HTTP server on the node's
// loopback and a reverse forward to Redis gets a shadow; cluster clients,
// on the host and in a pod, reach the server through the shadow's Service
// (the pod's IP, and the Service's name), and the job reaches Redis by name
// through the reverse tunnel.
func TestShadowForwardAndReverse(t *testing.T) {
	e := newTunnelEnv(t)
	shadowNS := e.ns + shadow.ShadowSuffix
	created, _ := e.runTunnels(shadowNS)
	e.waitEvent(created, "ShadowCreated")

	ctx := context.Background()
	name := shadow.Name(created)
	got, err := e.client.CoreV1().Pods(e.ns).Get(ctx, "tunnels", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// a client pod on the cluster's node reaches the job by the offloaded
	// pod's IP and by the shadow Service's name (CoreDNS)
	byName := fmt.Sprintf("%s.%s.svc.cluster.local", name, shadowNS)
	for _, host := range []string{got.Status.PodIP, byName} {
		out := e.clientPod(host, "8080", "/hosts")
		if !strings.Contains(out, "redis.default") {
			t.Errorf("a client pod fetching from %s got %q; want the job's /etc/hosts", host, out)
		}
	}

	// deleting the pod deletes its shadow
	if err := e.client.CoreV1().Pods(e.ns).Delete(ctx, "tunnels", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the shadow deleted with its pod", 90*time.Second, func() bool {
		_, err := e.client.AppsV1().Deployments(shadowNS).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// runTunnels runs the pod "tunnels", an HTTP server on the node's loopback
// with a reverse forward to Redis, and waits until its shadow in shadowNS
// carries both ways: the job reaches Redis by name through the reverse
// tunnel, and a cluster client reaches the server through the shadow's
// Service; the pod's IP is the running shadow pod's. The pod runs 45 s more.
func (e *env) runTunnels(shadowNS string) (*corev1.Pod, *corev1.Service) {
	e.t.Helper()
	return e.runTunnelsAt(shadowNS, 8080, "sleep 45\n")
}

// runTunnelsAt is runTunnels with the server on port, and then, a shell
// script, run by the job once Redis answered, in place of the 45 s sleep.
func (e *env) runTunnelsAt(shadowNS string, port int, then string) (*corev1.Pod, *corev1.Service) {
	e.t.Helper()
	script := `busybox httpd -f -p 127.0.0.1:` + strconv.Itoa(port) + ` -h /etc &
i=0
while [ $i -lt 60 ]; do
	if out=$(printf 'PING\r\n' | busybox nc redis.default 6379); then
		echo "redis says $out"
		break
	fi
	i=$((i + 1))
	sleep 1
done
` + then
	pod := e.pod("tunnels", script)
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis.default:6379"}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)

	ctx := context.Background()
	name := shadow.Name(created)
	var svc *corev1.Service
	e.waitFor("the shadow Service in "+shadowNS, 60*time.Second, func() bool {
		s, err := e.client.CoreV1().Services(shadowNS).Get(ctx, name, metav1.GetOptions{})
		svc = s
		return err == nil && s.Spec.ClusterIP != ""
	})
	got := e.waitPod("tunnels", "Running with the shadow pod's address", 120*time.Second, func(p *corev1.Pod) bool {
		sp := e.shadowPodNow(created, shadowNS)
		return p.Status.Phase == corev1.PodRunning && sp != nil && p.Status.PodIP == sp.Status.PodIP
	})

	// the job reaches Redis by name through the reverse tunnel
	e.waitFor("+PONG in the pod's logs", 90*time.Second, func() bool {
		// the container waits for the tunnel: until then its log is not there
		b, err := e.client.CoreV1().Pods(e.ns).GetLogs("tunnels", &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && strings.Contains(string(b), "redis says +PONG")
	})

	// a cluster client reaches the job's server through the shadow
	addr := serviceAddr(e.t, svc, port)
	var body string
	var err error
	e.waitFor("the job's HTTP server through the shadow", 60*time.Second, func() bool {
		body, err = httpGet(addr, "/hosts")
		return err == nil && strings.Contains(body, "redis.default")
	})
	e.t.Logf("GET /hosts through the shadow: %q", firstLine(body))
	return got, svc
}

// httpGet sends one HTTP/1.0 GET and returns the whole answer.
func httpGet(addr, path string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\n\r\n", path); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	if !strings.HasPrefix(b.String(), "HTTP/1.") {
		return b.String(), fmt.Errorf("no HTTP answer: %q", b.String())
	}
	return b.String(), sc.Err()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
