//go:build e2e

package e2e

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
)

// socksScript asks the SOCKS proxy for a Redis beyond the shadow pod (at
// BEYOND, an address of no interface of the shadow's), for redis.default, a
// Service the pod did not list (resolved by the cluster's DNS in the
// shadow), and for 127.0.0.1:6379, the shadow pod's own loopback, which
// the proxy must refuse. Then it reaches the listed redis (its own
// namespace's) by its forward every second.
const socksScript = `P=/usr/local/bin/sluice-probe
echo "via socks: $($P redis --addr "$BEYOND" --socks 127.0.0.1:1080)"
echo "cluster via socks: $($P redis --addr redis.default:6379 --socks 127.0.0.1:1080)"
echo "loopback via socks: $($P redis --addr 127.0.0.1:6379 --socks 127.0.0.1:1080)"
i=0
while [ $i -lt 600 ]; do
	echo "tick $i $($P redis --addr redis:6379)"
	i=$((i + 1))
	sleep 1
done
`

// socksPod is a pod running socksScript, with BEYOND set to beyond
// (host:port; any address when the test reaches no further than the start).
func (e *env) socksPod(name, beyond string) *corev1.Pod {
	pod := e.pod(name, socksScript)
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "BEYOND", Value: beyond})
	pod.Annotations = map[string]string{
		annotations.ReverseForwards:  "redis:6379",
		annotations.ReverseSocksPort: "1080",
	}
	return pod
}

// redisBeyond starts a Redis in the login node's network namespace, on its
// address: a destination the cluster side reaches that is no address of the
// shadow pod's, and returns its host:port.
func (e *env) redisBeyond(t *testing.T) string {
	t.Helper()
	addr := net.JoinHostPort(e.rig.Get(t, "RIG_LOGIN_ADDR"), "6390")
	cmd := exec.Command("ip", "netns", "exec", loginNetns, "redis-server",
		"--bind", e.rig.Get(t, "RIG_LOGIN_ADDR"), "--port", "6390", "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis beyond the shadow: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	e.waitFor("redis on "+addr, 10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return addr
}

// TestSocksRefusedWithoutAllowSocks: a pod asking for a SOCKS proxy on a
// node without Reverse.AllowSocks fails with the rule, and no job runs.
func TestSocksRefusedWithoutAllowSocks(t *testing.T) {
	parallel(t)
	e := newTunnelEnv(t)
	created := e.create(e.socksPod("nosocks", "192.0.2.1:6379"))
	got := e.waitPod("nosocks", "Failed", 60*time.Second, phaseIs(corev1.PodFailed))
	if got.Status.Reason != string(annotations.ReasonSocksNotAllowed) || !strings.Contains(got.Status.Message, annotations.ReverseSocksPort) ||
		!strings.Contains(got.Status.Message, "AllowSocks") {
		t.Errorf("reason %q message %q; want %s naming %s and AllowSocks", got.Status.Reason, got.Status.Message, annotations.ReasonSocksNotAllowed, annotations.ReverseSocksPort)
	}
	if jobs := e.squeue(string(created.UID)); len(jobs) != 0 {
		t.Errorf("Slurm jobs %v for a refused pod; want none", jobs)
	}
}

// TestSocksProxy: with AllowSocks, the job reaches a server it did not list
// and a cluster Service by name through the proxy on the node's 127.0.0.1,
// and is refused the shadow's own loopback, with a Warning Event and a warning in
// the shadow's log; when the tunnel drops and bob takes the
// proxy's port meanwhile, the listed forwards come back all the same.
func TestSocksProxy(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{reverse: "      AllowSocks: true\n"})
	beyond := e.redisBeyond(t)
	created := e.create(e.socksPod("socks", beyond))
	e.waitEvent(created, "ReverseSocksProxy")
	e.waitTick("socks", -1, "says +PONG", 120*time.Second)
	log := strings.Join(e.logs("socks", corev1.PodLogOptions{}), "\n")
	if !strings.Contains(log, "via socks: redis "+beyond+" says +PONG") {
		t.Errorf("the job did not reach %s through the proxy:\n%s", beyond, log)
	}
	if !strings.Contains(log, "cluster via socks: redis redis.default:6379 says +PONG") {
		t.Errorf("the job did not reach the Service redis.default through the proxy:\n%s", log)
	}
	if !strings.Contains(log, "loopback via socks: failed: ") || !strings.Contains(log, "not allowed") || strings.Contains(log, "127.0.0.1:6379 says") {
		t.Errorf("the proxy did not refuse 127.0.0.1, the shadow's own loopback:\n%s", log)
	}
	sp := e.shadowPod(created, e.ns+shadow.ShadowSuffix)
	b, err := e.client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, &corev1.PodLogOptions{Container: shadow.ContainerReverse}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(b), `"level":"WARN","msg":"SOCKS proxy up: open to every user of the node"`) {
		t.Errorf("ssh-reverse logs lack the SOCKS warning (%v):\n%s", err, b)
	}

	// The tunnel drops (the node's sshd stopped, its sessions killed), and
	// bob takes the proxy's port before it comes back.
	user := e.rig.Get(t, "RIG_USER")
	e.rig.Ctl(t, "stop", "sshd-node")
	t.Cleanup(func() { e.rig.Ctl(t, "start", "sshd-node") })
	pids, err := sessionPids(nodeNetns, user)
	if err != nil {
		t.Fatal(err)
	}
	killAll(t, pids)
	startAsOnNode(t, e.rig.Get(t, "RIG_OTHER_USER"), "socat", "-u", "TCP-LISTEN:1080,bind=127.0.0.1,reuseaddr,fork", "/dev/null")
	e.waitFor("bob on 127.0.0.1:1080 of the node", 10*time.Second, func() bool {
		out, _ := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltn", "sport = :1080").Output()
		return strings.Contains(string(out), "127.0.0.1:1080")
	})
	before := lastTick(e.ticks("socks"))
	e.rig.Ctl(t, "start", "sshd-node")
	e.waitTick("socks", before, "says +PONG", 60*time.Second)
	e.waitFor("the proxy's session refused its port", 30*time.Second, func() bool {
		b, err := e.client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, &corev1.PodLogOptions{Container: shadow.ContainerReverse}).DoRaw(context.Background())
		return err == nil && strings.Contains(string(b), "remote forward 127.0.0.1:1080 for the SOCKS proxy")
	})
}

// TestSocksRefusesAWildcardListener: a node sshd with GatewayPorts yes binds
// the proxy on every address; the job fails at start naming GatewayPorts.
func TestSocksRefusesAWildcardListener(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{reverse: "      AllowSocks: true\n"})
	e.rig.OverrideNodeSSHD(t, "GatewayPorts yes\n")
	created := e.create(e.socksPod("gateway", "192.0.2.1:6379"))
	got := e.waitPod("gateway", "Failed naming GatewayPorts", 180*time.Second, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && strings.Contains(p.Status.Message, "GatewayPorts")
	})
	t.Logf("pod message: %s", got.Status.Message)
	e.waitEvent(created, "failed before its containers started")
}
