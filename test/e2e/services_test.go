//go:build e2e

package e2e

import (
	"context"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// externalRedis gives the test's namespace what the rig gives default: the
// Service `redis` without a selector and an EndpointSlice naming the rig's
// Redis outside the cluster (RIG_REDIS_EXT_ADDR), so that a bare "redis"
// in reverse-forwards reaches it through kube-proxy.
func (e *env) externalRedis() {
	ctx := context.Background()
	host, portText, err := net.SplitHostPort(e.rig.Get(e.t, "RIG_REDIS_EXT_ADDR"))
	if err != nil {
		e.t.Fatalf("RIG_REDIS_EXT_ADDR: %v", err)
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		e.t.Fatalf("RIG_REDIS_EXT_ADDR: %v", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "redis"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "redis", Port: 6379}}},
	}
	if _, err := e.client.CoreV1().Services(e.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create service %s/redis: %v", e.ns, err)
	}
	name, proto, p32, ready := "redis", corev1.ProtocolTCP, int32(port), true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "redis-external", Labels: map[string]string{
			discoveryv1.LabelServiceName: "redis",
			discoveryv1.LabelManagedBy:   "sluice-e2e",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &p32}},
	}
	if _, err := e.client.DiscoveryV1().EndpointSlices(e.ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("create endpointslice %s/redis-external: %v", e.ns, err)
	}
}

// clientPod runs a pod on the rig's node, in the test's namespace, that
// sends GET path to host:port, and returns what it printed: a cluster
// client as users run them, resolved by the cluster's DNS.
func (e *env) clientPod(host, port, path string) string {
	e.t.Helper()
	url := "http://" + net.JoinHostPort(host, port) + path
	ctx := context.Background()
	yes, no, uid := true, false, int64(65532)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "client-"},
		Spec: corev1.PodSpec{
			NodeSelector:                 map[string]string{"kubernetes.io/hostname": e.rig.Get(e.t, "RIG_K8S_NODE")},
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name:            "client",
				Image:           e.keptImage(),
				ImagePullPolicy: corev1.PullNever,
				// busybox's nc: its wget, linked statically with glibc,
				// crashes resolving names outside the image it was built for
				Command: []string{"/bin/sh", "-c", `for i in 1 2 3 4 5 6 7 8 9 10; do
	if out=$(printf 'GET %s HTTP/1.0\r\n\r\n' "$URL_PATH" | nc -w 5 "$HOST" "$PORT") && [ -n "$out" ]; then
		printf '%s\n' "$out"
		exit 0
	fi
	sleep 2
done
exit 1`},
				Env: []corev1.EnvVar{{Name: "HOST", Value: host}, {Name: "PORT", Value: port}, {Name: "URL_PATH", Value: path}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	created, err := e.client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create client pod: %v", err)
	}
	var phase corev1.PodPhase
	e.waitFor("the client pod fetching "+url, 60*time.Second, func() bool {
		p, err := e.client.CoreV1().Pods(e.ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	})
	b, err := e.client.CoreV1().Pods(e.ns).GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		e.t.Fatalf("logs of client pod %s: %v", created.Name, err)
	}
	if phase != corev1.PodSucceeded {
		e.t.Errorf("client pod fetching %s: %s:\n%s", url, phase, b)
	}
	return string(b)
}
