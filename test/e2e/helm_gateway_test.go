//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
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
	login := r.e.rig.Get(t, "RIG_LOGIN_ADDR")
	port := r.e.rig.Get(t, "RIG_LOGIN_PORT")
	out, err = exec.Command("nsenter", "--target", pid, "--net", "ss", "-Htn", "state", "established",
		"dst", login, "dport = :"+port).Output()
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
	t.Logf("Secrets of release %s: %d, all in %s; ConfigMaps copied out of it: %d (the gateway's host keys)", r.name, kept, r.ns, copies)
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
