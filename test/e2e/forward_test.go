//go:build e2e

package e2e

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// nodeNetns is the network namespace the rig runs the compute node in.
const nodeNetns = "sluice-node"

// shadowAddr waits for the Service of pod's shadow (in the test's shadow
// namespace) and returns its ClusterIP and port.
func (e *env) shadowAddr(pod *corev1.Pod, port int) string {
	e.t.Helper()
	var svc *corev1.Service
	e.waitFor("the shadow Service of "+pod.Name[:min(len(pod.Name), 20)], 60*time.Second, func() bool {
		s, err := e.client.CoreV1().Services(e.ns+shadow.ShadowSuffix).Get(context.Background(), shadow.Name(pod), metav1.GetOptions{})
		svc = s
		return err == nil && s.Spec.ClusterIP != ""
	})
	return serviceAddr(e.t, svc, port)
}

// shadowPod returns the running pod of pod's shadow in namespace ns.
func (e *env) shadowPod(pod *corev1.Pod, ns string) *corev1.Pod {
	e.t.Helper()
	var sp *corev1.Pod
	e.waitFor("the shadow pod running", 60*time.Second, func() bool {
		sel := labels.Set{shadow.LabelPodUID: string(pod.UID)}.AsSelector().String()
		list, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				sp = p
				return true
			}
		}
		return false
	})
	return sp
}

// tunnelCondition returns the pod's TunnelReady condition, or nil.
func tunnelCondition(p *corev1.Pod) *corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == provider.ConditionTunnelReady {
			return &c
		}
	}
	return nil
}

// waitTunnel waits until the pod's TunnelReady condition has status and a
// message containing msg.
func (e *env) waitTunnel(name string, status corev1.ConditionStatus, msg string) *corev1.Pod {
	e.t.Helper()
	return e.waitPod(name, fmt.Sprintf("TunnelReady %s %q", status, msg), 90*time.Second, func(p *corev1.Pod) bool {
		c := tunnelCondition(p)
		return c != nil && c.Status == status && strings.Contains(c.Message, msg)
	})
}

// longName is a pod name of 253 characters, the longest the API server
// takes, ending in tail.
func longName(tail string) string {
	return strings.Repeat("a", 253-len(tail)) + tail
}

// TestForwardTargetLoginWithLongNames: with ForwardTarget login, the login
// node dials the job's port on the node's address; two pods whose
// 253-character names differ only at the end get valid, distinct shadows,
// each reaching its own job.
func TestForwardTargetLoginWithLongNames(t *testing.T) {
	e := newTunnelEnv(t, tunnelOpts{ssh: "    ForwardTarget: login\n"})
	var pods []*corev1.Pod
	for i, port := range []int{8080, 8081} {
		name := longName(fmt.Sprintf("-%d", i))
		// the job binds every address of the node, its own included
		pod := e.pod(name, fmt.Sprintf("echo pod-%d > /tmp/who-%d\nbusybox httpd -f -p 0.0.0.0:%d -h /tmp\n", i, i, port))
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
		pods = append(pods, e.create(pod))
	}
	a, b := shadow.Name(pods[0]), shadow.Name(pods[1])
	if a == b || len(a) > 63 || len(b) > 63 {
		t.Errorf("shadow names %q and %q; want two distinct names of at most 63 characters", a, b)
	}
	for i, pod := range pods {
		addr := e.shadowAddr(pod, 8080+i)
		var body string
		var err error
		e.waitFor(fmt.Sprintf("pod %d's server through its shadow", i), 120*time.Second, func() bool {
			body, err = httpGet(addr, fmt.Sprintf("/who-%d", i))
			return err == nil && strings.Contains(body, fmt.Sprintf("pod-%d", i))
		})
		got := e.waitTunnel(pod.Name, corev1.ConditionTrue, "forward up on node ")
		e.waitEvent(got, "forward tunnel up")
	}
}

// TestForwardFollowsTheNodeAndSurvivesSshdRestart: the tunnel follows a
// change of the node ConfigMap without its shadow pod restarting, and after
// the node's sshd is restarted in the middle of a transfer (its sessions
// killed too), new connections work again within seconds, told by Events.
func TestForwardFollowsTheNodeAndSurvivesSshdRestart(t *testing.T) {
	e := newTunnelEnv(t)
	script := `mkdir -p /tmp/www && echo served-by-the-job > /tmp/www/hello
dd if=/dev/zero of=/tmp/www/big bs=1M count=64 2>/dev/null
busybox httpd -f -p 127.0.0.1:8080 -h /tmp/www
`
	pod := e.pod("follow", script)
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	addr := e.shadowAddr(created, 8080)
	get := func() bool {
		body, err := httpGet(addr, "/hello")
		return err == nil && strings.Contains(body, "served-by-the-job")
	}
	e.waitFor("the job's server through the shadow", 120*time.Second, get)
	node := e.rig.Get(t, "RIG_NODE_NAME")
	e.waitTunnel("follow", corev1.ConditionTrue, "up on node "+node)
	shadowNS := e.ns + shadow.ShadowSuffix
	before := e.shadowPod(created, shadowNS)

	// The node ConfigMap names the node by its address: the tunnel follows.
	ctx := context.Background()
	nodeAddr := e.rig.Get(t, "RIG_NODE_ADDR")
	cmName := shadow.Name(created) + "-node"
	cm, err := e.client.CoreV1().ConfigMaps(shadowNS).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the node ConfigMap: %v", err)
	}
	if cm.Data[shadow.NodeKey] != node {
		t.Errorf("node ConfigMap says %q; want %q, the job's batch host", cm.Data[shadow.NodeKey], node)
	}
	cm.Data[shadow.NodeKey] = nodeAddr
	if _, err := e.client.CoreV1().ConfigMaps(shadowNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update the node ConfigMap: %v", err)
	}
	// As sluice-vk does after writing it: a change of the shadow pod makes
	// the kubelet bring the mounted ConfigMap up to date now, not at its
	// next periodic sync (a minute or two).
	nudge := []byte(`{"metadata":{"annotations":{"e2e.sluice.io/node-changed":"` + nodeAddr + `"}}}`)
	if _, err := e.client.CoreV1().Pods(shadowNS).Patch(ctx, before.Name, types.MergePatchType, nudge, metav1.PatchOptions{}); err != nil {
		t.Fatalf("nudge the shadow pod: %v", err)
	}
	e.waitTunnel("follow", corev1.ConditionTrue, "up on node "+nodeAddr)
	if !get() {
		t.Errorf("the job's server not reached after the node change")
	}
	after := e.shadowPod(created, shadowNS)
	if after.UID != before.UID || restarts(after) != 0 {
		t.Errorf("shadow pod %s (%d restarts) after the node change; want %s with none", after.UID, restarts(after), before.UID)
	}

	// The node's sshd restarted mid-transfer.
	transfer, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer transfer.Close()
	fmt.Fprintf(transfer, "GET /big HTTP/1.0\r\n\r\n")
	if _, err := io.ReadFull(transfer, make([]byte, 1<<20)); err != nil {
		t.Fatalf("first MiB of the transfer: %v", err)
	}
	user := e.rig.Get(t, "RIG_USER")
	e.rig.Ctl(t, "stop", "sshd-node")
	pids, err := sessionPids(nodeNetns, user)
	if err != nil {
		t.Fatal(err)
	}
	killAll(t, pids)
	e.rig.Ctl(t, "start", "sshd-node")
	restarted := time.Now()
	t.Logf("node sshd restarted, %d session processes of %s killed", len(pids), user)

	transfer.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := io.Copy(io.Discard, transfer); err == nil && n >= 63<<20 {
		t.Errorf("the transfer went on over a killed session (%d more bytes); want it cut", n)
	}
	e.waitFor("new connections through the shadow", 30*time.Second, get)
	t.Logf("new connections work %v after the restart", time.Since(restarted).Round(10*time.Millisecond))
	e.waitEvent(created, "forward tunnel up again")
	if sp := e.shadowPod(created, shadowNS); sp.UID != before.UID || restarts(sp) != 0 {
		t.Errorf("shadow pod %s (%d restarts) after the sshd restart; want %s with none", sp.UID, restarts(sp), before.UID)
	}
}

// TestWrongNodeHostKeyRefusesTheTunnel: with a node host key pinned that is
// not the node's, the tunnel does not connect, sends nothing, logs it, and
// the pod gets a Warning Event and a TunnelReady condition saying so.
func TestWrongNodeHostKeyRefusesTheTunnel(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	rig := testrig.Load(t)
	wrong := knownhosts.Line([]string{rig.Get(t, "RIG_NODE_NAME"), rig.Get(t, "RIG_NODE_ADDR")}, key) + "\n"
	e := newTunnelEnv(t, tunnelOpts{nodeKnownHosts: wrong})

	pod := e.pod("wrongkey", "busybox httpd -f -vv -p 127.0.0.1:8080 -h /etc\n")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	addr := e.shadowAddr(created, 8080)
	got := e.waitTunnel("wrongkey", corev1.ConditionFalse, "host key")
	if c := tunnelCondition(got); c.Reason != "HostKeyRejected" {
		t.Errorf("condition reason %q; want HostKeyRejected", c.Reason)
	}
	e.waitEvent(got, "forward tunnel refused a host key")

	if body, err := httpGet(addr, "/hosts"); err == nil {
		t.Errorf("a client got %q through a tunnel whose node key is wrong; want it refused", firstLine(body))
	}
	sp := e.shadowPod(created, e.ns+shadow.ShadowSuffix)
	b, err := e.client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, &corev1.PodLogOptions{Container: shadow.ContainerForward}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(b), "host key rejected") {
		t.Errorf("ssh-forward logs %q (%v); want the host key rejected line", b, err)
	}
	if jobLog := strings.Join(e.logs("wrongkey", corev1.PodLogOptions{}), "\n"); strings.Contains(jobLog, "url:") {
		t.Errorf("the job's server saw a request through a tunnel with a wrong node key:\n%s", jobLog)
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
