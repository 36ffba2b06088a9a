//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gatewayPods are the release's gateway pods.
func (r *release) gatewayPods() []corev1.Pod {
	r.e.t.Helper()
	list, err := r.e.client.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=sluice-gateway,app.kubernetes.io/instance=" + r.name,
	})
	if err != nil {
		r.e.t.Fatalf("the gateway's pods: %v", err)
	}
	return list.Items
}

// reverseOnly creates n pods of the test's namespace, each with a reverse
// tunnel to Redis and an exposed port (so a forward and a reverse tunnel
// container each), and waits until every job has reached Redis.
func (e *env) reverseOnly(n int) {
	e.t.Helper()
	script := `i=0
while [ $i -lt 60 ]; do
	if out=$(printf 'PING\r\n' | busybox nc redis.default 6379); then
		echo "redis says $out"
		break
	fi
	i=$((i + 1))
	sleep 1
done
sleep 60
`
	for i := range n {
		p := e.pod(fmt.Sprintf("more-%d", i), script)
		p.Annotations = map[string]string{annotations.ReverseForwards: "redis.default:6379"}
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
		e.create(p)
	}
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("more-%d", i)
		e.waitFor("+PONG in the logs of "+name, 120*time.Second, func() bool {
			b, err := e.client.CoreV1().Pods(e.ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
			return err == nil && strings.Contains(string(b), "redis says +PONG")
		})
	}
}

// loginConnections counts the TCP connections established from pod's
// network namespace to the login node's sshd (ss in the pod's network
// namespace, entered through its first container's process: the pods'
// traffic to the site is masqueraded, so the login node cannot tell them
// apart).
func (r *release) loginConnections(pod *corev1.Pod) int {
	r.e.t.Helper()
	return r.connectionsIn(pod, "state", "established",
		"dst", r.e.rig.Get(r.e.t, "RIG_LOGIN_ADDR"), "dport = :"+r.e.rig.Get(r.e.t, "RIG_LOGIN_PORT"))
}

// connectionsIn counts the TCP connections ss lists with filter in pod's
// network namespace, entered through its first container's process.
func (r *release) connectionsIn(pod *corev1.Pod, filter ...string) int {
	t := r.e.t
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container", pod.Name)
	}
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := exec.Command("ctr", "--address", r.e.rig.Get(t, "RIG_K8S_CONTAINERD_SOCK"), "--namespace", "k8s.io", "tasks", "ls").Output()
	if err != nil {
		t.Fatalf("ctr tasks ls: %v", err)
	}
	var pid string
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			pid = f[1]
		}
	}
	if pid == "" {
		t.Fatalf("pod %s: no task of container %s", pod.Name, id)
	}
	out, err = exec.Command("nsenter", append([]string{"--target", pid, "--net", "ss", "-Htn"}, filter...)...).Output()
	if err != nil {
		t.Fatalf("ss in the network namespace of pod %s: %v", pod.Name, err)
	}
	return len(strings.Fields(strings.TrimSpace(string(out)))) / 4
}

// checkGatewayConnections: the login node sees at most M+1 connections
// from each gateway replica for jobs on M compute nodes (the rig's site
// has one), and none from a shadow, whatever the number of tunnelled pods.
func (r *release) checkGatewayConnections(shadowNS string) {
	t := r.e.t
	t.Helper()
	const nodes = 1 // the rig's site has one compute node
	total := 0
	gws := r.gatewayPods()
	if len(gws) == 0 {
		t.Fatal("no gateway pod")
	}
	for i := range gws {
		if lines := forbidden(r.podLog(gws[i].Name, false)); len(lines) > 0 {
			t.Errorf("with the chart's rights, gateway %s was refused %d calls:\n%s", gws[i].Name, len(lines), strings.Join(lines, "\n"))
		}
		n := r.loginConnections(&gws[i])
		total += n
		if n > nodes+1 {
			t.Errorf("gateway %s holds %d connections to the login node; want at most %d", gws[i].Name, n, nodes+1)
		}
	}
	list, err := r.e.client.CoreV1().Pods(shadowNS).List(context.Background(), metav1.ListOptions{
		LabelSelector: shadow.LabelNode + "=" + r.e.node})
	if err != nil {
		t.Fatal(err)
	}
	tunnels := 0
	for i := range list.Items {
		sp := &list.Items[i]
		if sp.Status.Phase != corev1.PodRunning {
			continue
		}
		tunnels += len(sp.Spec.Containers)
		if n := r.loginConnections(sp); n != 0 {
			t.Errorf("shadow %s holds %d connections to the login node; want none (the gateway holds them)", sp.Name, n)
		}
	}
	t.Logf("login connections: %d from %d gateway replicas, none from %d shadow pods (%d tunnel containers)",
		total, len(gws), len(list.Items), tunnels)
}

// checkNoSecretOutside: no Secret of the release's (made by the chart, or
// a copy sluice-vk made of one of its namespace's) is in any namespace but
// the release's own, and the only copy of a ConfigMap is the gateway's
// host keys, which are public.
func (r *release) checkNoSecretOutside() {
	t := r.e.t
	t.Helper()
	ctx := context.Background()
	secrets, err := r.e.client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ours := func(m metav1.ObjectMeta) bool {
		return m.Labels["app.kubernetes.io/instance"] == r.name || strings.HasPrefix(m.Annotations[shadow.AnnotationCopyOf], r.ns+"/")
	}
	kept := 0
	for _, s := range secrets.Items {
		if !ours(s.ObjectMeta) && s.Namespace != r.ns {
			continue
		}
		if s.Namespace != r.ns {
			t.Errorf("Secret %s/%s of release %s outside its namespace", s.Namespace, s.Name, r.name)
		} else {
			kept++
		}
	}
	maps, err := r.e.client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: shadow.CopySelector})
	if err != nil {
		t.Fatal(err)
	}
	copies := 0
	for _, c := range maps.Items {
		if !ours(c.ObjectMeta) {
			continue
		}
		copies++
		if c.Name != r.name+"-gateway-host-keys" {
			t.Errorf("ConfigMap %s/%s copied from %s; want only the gateway's host keys copied", c.Namespace, c.Name, c.Annotations[shadow.AnnotationCopyOf])
		}
	}
	t.Logf("Secrets of release %s: %d, all in %s; ConfigMaps copied out of it: %d, all the gateway's host keys", r.name, kept, r.ns, copies)
}

// checkUpgradeKeepsHostKey: helm upgrade (the same chart and values) keeps
// the host key the gateway wrote into the chart's empty Secret, and its
// published public half: the shadows' pins stay true.
func (r *release) checkUpgradeKeepsHostKey() {
	t := r.e.t
	t.Helper()
	ctx := context.Background()
	read := func() (string, string) {
		s, err := r.e.client.CoreV1().Secrets(r.ns).Get(ctx, r.name+"-gateway-host-key", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the gateway's host key Secret: %v", err)
		}
		c, err := r.e.client.CoreV1().ConfigMaps(r.ns).Get(ctx, r.name+"-gateway-host-keys", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the gateway's host keys ConfigMap: %v", err)
		}
		return string(s.Data["ssh-privatekey"]), c.Data["known_hosts"]
	}
	key, hosts := read()
	if key == "" || hosts == "" {
		t.Fatalf("host key %d bytes, known_hosts %q: want both filled by the gateway", len(key), hosts)
	}
	if out, err := r.run("upgrade", r.name, filepath.Join(repoRoot(), "charts", "sluice"), "--namespace", r.ns, "--reuse-values", "--wait", "--timeout", "120s"); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	if k, h := read(); k != key || h != hosts {
		t.Errorf("after helm upgrade: host key changed %v, known_hosts %q (was %q); want both kept", k != key, h, hosts)
	}
}

// TestHelmGatewayFailover: two gateway replicas; the one carrying a pod's
// tunnels is killed (SIGKILL of its process through the node's containerd:
// a crash, no goodbye to anyone). The shadow's tunnels come back through
// the Service within a generous bound, and the times are logged: the
// forward (a cluster client's GET through the shadow, polled every
// 100 ms) and the reverse (the job's own PING to Redis every 0.3 s,
// timestamped by the job). Meanwhile the job's connections to its relay
// fail: none gets an answer from anywhere but Redis.
func TestHelmGatewayFailover(t *testing.T) {
	r := installChart(t, true, "gateway:\n  replicas: 2\n  resources:\n    requests:\n      cpu: 10m\n      memory: 32Mi\n")
	e := r.e
	ctx := context.Background()
	e.waitFor("two gateway replicas ready", 90*time.Second, func() bool {
		ready := 0
		for _, p := range r.gatewayPods() {
			if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
				ready++
			}
		}
		return ready == 2
	})

	// the job: an HTTP server on its loopback, and a PING to Redis through
	// the relay every 0.3 s, each answer or failure logged with the time
	script := `busybox httpd -f -p 127.0.0.1:8080 -h /etc &
i=0
while [ $i -lt 400 ]; do
	out=$(printf 'PING\r\n' | busybox nc -w 2 redis.default 6379 2>/dev/null | tr -d '\r')
	echo "ping $(date +%s) ${out:-none}"
	i=$((i + 1))
	sleep 0.3
done
`
	pod := e.pod("failover", script)
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis.default:6379"}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	created := e.create(pod)
	var svc *corev1.Service
	e.waitFor("the shadow Service", 60*time.Second, func() bool {
		s, err := e.client.CoreV1().Services(e.ns).Get(ctx, shadow.Name(created), metav1.GetOptions{})
		svc = s
		return err == nil && s.Spec.ClusterIP != ""
	})
	addr := serviceAddr(t, svc, 8080)
	pings := func() []string {
		b, _ := e.client.CoreV1().Pods(e.ns).GetLogs("failover", &corev1.PodLogOptions{}).DoRaw(ctx)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	e.waitFor("the job's PING answered through the reverse tunnel", 120*time.Second, func() bool {
		l := pings()
		return strings.HasSuffix(l[len(l)-1], " +PONG")
	})
	e.waitFor("the job's HTTP server through the forward tunnel", 60*time.Second, func() bool {
		_, err := httpGet(addr, "/hosts")
		return err == nil
	})

	// the replica that carries the shadow's connections
	var victim *corev1.Pod
	gws := r.gatewayPods()
	for i := range gws {
		if r.shadowConnections(&gws[i]) > 0 && (victim == nil || r.shadowConnections(&gws[i]) > r.shadowConnections(victim)) {
			victim = &gws[i]
		}
	}
	if victim == nil {
		t.Fatal("no gateway replica holds the shadow's connections")
	}
	held := r.shadowConnections(victim)
	before := len(pings())
	container := strings.TrimPrefix(victim.Status.ContainerStatuses[0].ContainerID, "containerd://")
	killed := time.Now()
	kill := exec.Command("ctr", "--address", e.rig.Get(t, "RIG_K8S_CONTAINERD_SOCK"), "--namespace", "k8s.io",
		"tasks", "kill", "--signal", "SIGKILL", container)
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("kill gateway %s: %v\n%s", victim.Name, err, out)
	}

	// The victim carried one or both of the shadow's connections (the
	// Service spreads them): a tunnel whose connection was there fails
	// and comes back; the other never fails.
	// the forward: the first GET that works again, polled every 100 ms
	var forwardBack time.Duration
	failed := 0
	e.waitFor("the forward tunnel back", 60*time.Second, func() bool {
		_, err := httpGet(addr, "/hosts")
		if err != nil {
			failed++
			time.Sleep(100 * time.Millisecond)
			return false
		}
		forwardBack = time.Since(killed)
		return failed > 0 || forwardBack > 5*time.Second
	})
	// the reverse: the first +PONG after an unanswered PING, by the job's
	// clock (whole seconds)
	var lost, back int64
	e.waitFor("the reverse tunnel back", 60*time.Second, func() bool {
		lost, back = 0, 0
		for _, l := range pings()[before:] {
			f := strings.Fields(l)
			if len(f) != 3 || f[0] != "ping" {
				continue
			}
			at, _ := strconv.ParseInt(f[1], 10, 64)
			switch {
			case f[2] != "+PONG" && lost == 0:
				lost = at
			case f[2] == "+PONG" && lost != 0:
				back = at
				return true
			}
		}
		return lost == 0 && time.Since(killed) > 10*time.Second
	})
	var answers, none int
	for _, l := range pings()[before:] {
		switch f := strings.Fields(l); {
		case len(f) != 3:
		case f[2] == "+PONG":
			answers++
		case f[2] == "none":
			none++
		default:
			t.Errorf("the job's PING got %q: an answer from something else than Redis", l)
		}
	}
	forward, reverse := "not carried by it", "not carried by it"
	if failed > 0 {
		forward = fmt.Sprintf("back after %s (%d GETs failed)", forwardBack.Round(100*time.Millisecond), failed)
	}
	if lost != 0 {
		reverse = fmt.Sprintf("back %d s after the kill by the job's clock (%d PINGs unanswered meanwhile, none answered by another)", back-killed.Unix(), none)
	}
	t.Logf("gateway %s (%d of the shadow's connections) killed (SIGKILL): forward %s; reverse %s; %d PINGs answered by Redis since",
		victim.Name, held, forward, reverse, answers)
	switch {
	case failed == 0 && lost == 0:
		t.Errorf("neither tunnel failed when gateway %s, holding %d of the shadow's connections, was killed", victim.Name, held)
	case failed > 0 && forwardBack > 30*time.Second, lost != 0 && back-killed.Unix() > 30:
		t.Errorf("tunnels back after %s (forward) and %d s (reverse); want within 30 s", forwardBack, back-killed.Unix())
	}
}

// shadowConnections counts the shadows' connections established to gateway
// pod gw (its port 2222), in its network namespace.
func (r *release) shadowConnections(gw *corev1.Pod) int {
	return r.connectionsIn(gw, "state", "established", "sport = :2222")
}
