//go:build rig

package rignode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterDNSAndServices runs a restricted pod that resolves cluster
// names through the cluster DNS (CoreDNS on the node, behind kube-dns),
// talks to Redis through its selectorless Service by a short name (the
// search path) and reads the login
// node's SSH banner (egress to the site, masqueraded). Its log, read
// through the API server from the kubelet, must show each answer.
func TestClusterDNSAndServices(t *testing.T) {
	e := loadNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := e.namespace(ctx, t)
	script := fmt.Sprintf(`set -u
for name in kubernetes.default.svc.cluster.local redis.default.svc.cluster.local kube-dns.kube-system.svc.cluster.local; do
	if addr=$(nslookup "$name" | awk '/^Name:/ {n = 1} n && /^Address/ {print $NF; exit}') && [ -n "$addr" ]; then
		echo "resolve $name $addr"
	else
		echo "resolve $name FAILED"
	fi
done
echo "redis $(printf 'PING\r\n' | nc -w 5 redis.default 6379 | tr -d '\r')"
echo "login $(nc -w 5 %s 22 </dev/null | head -n 1 | tr -d '\r')"
echo done
`, e.login)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                 map[string]string{"kubernetes.io/hostname": e.node},
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptrTo(false),
			SecurityContext:              restrictedPodContext(),
			Containers: []corev1.Container{{
				Name:            "dns",
				Image:           e.image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"/bin/sh", "-c", script},
				SecurityContext: restrictedContext(),
			}},
		},
	}
	if _, err := e.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	var logs string
	poll(ctx, t, "the pod to finish", func(ctx context.Context) (bool, string) {
		got, err := e.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if got.Status.Phase != corev1.PodSucceeded && got.Status.Phase != corev1.PodFailed {
			return false, fmt.Sprintf("phase %s, %s", got.Status.Phase, containerStates(got))
		}
		b, err := e.client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, "logs: " + err.Error()
		}
		logs = string(b)
		return true, ""
	})
	t.Logf("pod log:\n%s", logs)
	svc, err := e.client.CoreV1().Services("default").Get(ctx, "redis", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get service default/redis: %v", err)
	}
	for _, want := range []string{
		"resolve kubernetes.default.svc.cluster.local 10.96.0.1\n",
		"resolve redis.default.svc.cluster.local " + svc.Spec.ClusterIP + "\n",
		"resolve kube-dns.kube-system.svc.cluster.local " + e.dns + "\n",
		"redis +PONG\n",
		"login SSH-2.0-OpenSSH",
		"done\n",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("pod log lacks %q", want)
		}
	}
}
