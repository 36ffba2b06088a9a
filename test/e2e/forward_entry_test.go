//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestForwardSkipsAnotherUsersListener: bob, another user of the node,
// serves the pod's port on the node's 127.0.0.1 before the job starts; the
// job serves it on its own address (SLUICE_POD_IP). The shadow's forward
// goes through the job's relay, so the cluster's clients get the job's
// answer, never bob's; so does kubectl port-forward, through sluice-vk. A
// second port the pod declares and its job does not serve, which bob also
// holds, is refused, and a ForwardRefused Event names bob's uid.
func TestForwardSkipsAnotherUsersListener(t *testing.T) {
	parallel(t)
	keys := testrig.Load(t).Get(t, "RIG_NODE_KNOWN_HOSTS")
	e := newTunnelEnv(t, tunnelOpts{ssh: "    NodeKnownHostsFile: " + keys + "\n"})
	port := freeNodePortE2E(t)
	startAsOnNode(t, e.rig.Get(t, "RIG_OTHER_USER"),
		"socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", port), "SYSTEM:echo from-bob")
	e.waitFor("bob on 127.0.0.1 of the node", 10*time.Second, func() bool { return nodeListens(port) })
	// a port the pod declares and its job does not serve, which bob holds
	squatted := freeNodePortE2E(t)
	for squatted == port {
		squatted = freeNodePortE2E(t)
	}
	startAsOnNode(t, e.rig.Get(t, "RIG_OTHER_USER"),
		"socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", squatted), "SYSTEM:echo from-bob")
	e.waitFor("bob on 127.0.0.1 of the node", 10*time.Second, func() bool { return nodeListens(squatted) })

	script := fmt.Sprintf("busybox httpd -f -p \"$SLUICE_POD_IP:%d\" -h /etc &\nsleep 60\n", port)
	pod := e.pod("entry", script)
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis.default:6379"}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP},
		{Name: "squatted", ContainerPort: int32(squatted), Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	shadowNS := e.ns + shadow.ShadowSuffix
	name := shadow.Name(created)
	var svc *corev1.Service
	e.waitFor("the shadow Service", 60*time.Second, func() bool {
		s, err := e.client.CoreV1().Services(shadowNS).Get(context.Background(), name, metav1.GetOptions{})
		svc = s
		return err == nil && s.Spec.ClusterIP != ""
	})
	e.waitPod("entry", "Running", 120*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	addr := serviceAddr(t, svc, port)
	var body string
	var err error
	e.waitFor("the job's HTTP server through the shadow", 60*time.Second, func() bool {
		body, err = httpGet(addr, "/hosts")
		if strings.Contains(body, "from-bob") {
			t.Fatalf("the forward reached bob's listener: %q", body)
		}
		return err == nil && strings.Contains(body, "redis.default")
	})
	for range 5 {
		if body, err = httpGet(addr, "/hosts"); err != nil || !strings.Contains(body, "redis.default") {
			t.Errorf("GET /hosts through the shadow: %q, %v; want the job's /etc/hosts", firstLine(body), err)
		}
	}

	// bob's port is refused, and the pod's Events say why
	if body, err := httpGet(serviceAddr(t, svc, squatted), "/"); err == nil || strings.Contains(body, "from-bob") {
		t.Errorf("GET through the shadow to port %d, which bob holds: %q, %v; want it refused", squatted, firstLine(body), err)
	}
	bobUID := "owned by uid " + lookupUID(t, e.rig.Get(t, "RIG_OTHER_USER"))
	e.waitFor("a ForwardRefused Event naming bob's listener", 60*time.Second, func() bool {
		for _, ev := range e.events(created) {
			if strings.HasPrefix(ev, "ForwardRefused:") && strings.Contains(ev, bobUID) {
				return true
			}
		}
		return false
	})

	// kubectl port-forward goes through the job's relay too.
	local, _ := e.portForward(e.restConfig(), "entry", port, true)
	body, err = httpGet(local, "/hosts")
	if err != nil || !strings.Contains(body, "redis.default") {
		t.Errorf("GET /hosts through port-forward: %q, %v; want the job's /etc/hosts, not bob's answer", body, err)
	}
}

// startAsOnNode runs argv as user in the node's network namespace until
// the test ends.
func startAsOnNode(t *testing.T, user string, argv ...string) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", nodeNetns, "runuser", "-u", user, "--"}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

// nodeListens reports whether something listens on port in the node's
// network namespace.
func nodeListens(port int) bool {
	out, _ := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltn", "sport = :"+strconv.Itoa(port)).Output()
	return strings.TrimSpace(string(out)) != ""
}

// freeNodePortE2E returns a port nothing listens on in the node's namespace.
func freeNodePortE2E(t *testing.T) int {
	t.Helper()
	for range 100 {
		if p := 20000 + rand.IntN(20000); !nodeListens(p) {
			return p
		}
	}
	t.Fatal("no free port on the node")
	return 0
}

// lookupUID is user's uid on this machine (the rig's users are the
// site's), as a decimal string.
func lookupUID(t *testing.T, name string) string {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s: %v", name, err)
	}
	return u.Uid
}
