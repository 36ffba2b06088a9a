//go:build rig

// Package rignode tests the rig's real Kubernetes node (hack/rig/lib/node.sh:
// containerd, runc, the kubelet, kube-proxy and a bridge CNI network) and
// what the cluster has with it (hack/rig/lib/cluster.sh: CoreDNS, Redis as
// a Service outside the cluster).
package rignode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// restrictedUID is the uid the project's images run as.
const restrictedUID = 65532

type nodeEnv struct {
	client  kubernetes.Interface
	node    string
	image   string
	login   string
	dns     string
	podCIDR netip.Prefix
}

func loadNode(t *testing.T) *nodeEnv {
	t.Helper()
	rig := testrig.Load(t)
	if _, ok := rig.Lookup("RIG_K8S_NODE"); !ok {
		testrig.Unavailable(t, "the rig runs without its node (SLUICE_RIG_NODE=0): run hack/rig/rig.sh up")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", rig.Get(t, "RIG_KUBECONFIG"))
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	cidr, err := netip.ParsePrefix(rig.Get(t, "RIG_K8S_POD_CIDR"))
	if err != nil {
		t.Fatalf("RIG_K8S_POD_CIDR: %v", err)
	}
	return &nodeEnv{
		client:  client,
		node:    rig.Get(t, "RIG_K8S_NODE"),
		image:   rig.Get(t, "RIG_K8S_BUSYBOX_IMAGE"),
		login:   rig.Get(t, "RIG_LOGIN_ADDR"),
		dns:     rig.Get(t, "RIG_K8S_CLUSTER_DNS"),
		podCIDR: cidr,
	}
}

// poll calls check every 200 ms until it reports done or ctx ends; the
// failure names what was awaited and the last thing check said.
func poll(ctx context.Context, t *testing.T, what string, check func(context.Context) (bool, string)) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "not checked yet"
	for {
		done, state := check(ctx)
		if done {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %s)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func TestNodeIsReady(t *testing.T) {
	e := loadNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", e.node, err)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
			if !ready {
				t.Errorf("node %s Ready is %s: %s", e.node, c.Status, c.Message)
			}
		}
	}
	if !ready {
		t.Errorf("node %s has no Ready condition that is True", e.node)
	}
	info := node.Status.NodeInfo
	if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("container runtime %q; want containerd://…", info.ContainerRuntimeVersion)
	}
	if !strings.HasPrefix(info.KubeletVersion, "v1.") {
		t.Errorf("kubelet version %q; want v1.…", info.KubeletVersion)
	}
	// the shadows of the e2e tests ask for no toleration
	for _, taint := range node.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
			t.Errorf("node %s is tainted %s:%s; shadows would not be placed on it", e.node, taint.Key, taint.Effect)
		}
	}
	t.Logf("node %s: kubelet %s, %s, %s", e.node, info.KubeletVersion, info.ContainerRuntimeVersion, info.KernelVersion)
}

// TestRestrictedPodBehindClusterIP runs a pod that passes the restricted Pod
// Security Standard (in a namespace enforcing it) from the locally imported
// busybox image, and reaches it from the host through a ClusterIP Service
// (kube-proxy). The pod serves its name, its uid and whether its root
// filesystem is writable, so the answer proves it is that pod, as that user.
func TestRestrictedPodBehindClusterIP(t *testing.T) {
	e := loadNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns := e.namespace(ctx, t)
	pod := e.restrictedServer(ns)
	if _, err := e.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod (restricted namespace): %v", err)
	}
	var podIP string
	poll(ctx, t, "the pod to be Running and Ready", func(ctx context.Context) (bool, string) {
		got, err := e.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		podIP = got.Status.PodIP
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %s, %s", got.Status.Phase, containerStates(got))
	})
	ip, err := netip.ParseAddr(podIP)
	if err != nil || !e.podCIDR.Contains(ip) {
		t.Fatalf("pod IP %q; want an address in the bridge network %s", podIP, e.podCIDR)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	svc, err = e.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	want := fmt.Sprintf("%s uid=%d root=read-only", pod.Name, restrictedUID)
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	httpClient := &http.Client{Timeout: 2 * time.Second}
	// the sandbox answers connects to unknown addresses: only the pod's own
	// answer counts
	poll(ctx, t, "the pod's answer through ClusterIP "+svc.Spec.ClusterIP, func(ctx context.Context) (bool, string) {
		body, err := get(ctx, httpClient, url)
		if err != nil {
			return false, err.Error()
		}
		if body != want {
			return false, fmt.Sprintf("got %q; want %q", body, want)
		}
		return true, ""
	})
	t.Logf("pod %s at %s answered through %s", pod.Name, podIP, url)
}

// namespace makes a namespace enforcing the restricted Pod Security
// Standard, deleted when the test ends.
func (e *nodeEnv) namespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "rignode-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	ns, err := e.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = e.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// restrictedServer is a busybox httpd pod on the rig's node with the
// restricted security context; it writes its page into an emptyDir (the
// root filesystem is read-only) and serves it on 8080.
func (e *nodeEnv) restrictedServer(ns string) *corev1.Pod {
	script := `if touch /probe-write 2>/dev/null; then root=writable; else root=read-only; fi
echo "$POD_NAME uid=$(id -u) root=$root" >/www/index.html
exec httpd -f -p 8080 -h /www`
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeSelector:                 map[string]string{"kubernetes.io/hostname": e.node},
			AutomountServiceAccountToken: ptrTo(false),
			SecurityContext:              restrictedPodContext(),
			Containers: []corev1.Container{{
				Name:            "web",
				Image:           e.image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"/bin/sh", "-c", script},
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				}}},
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "www", MountPath: "/www"}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
				SecurityContext: restrictedContext(),
			}},
			Volumes: []corev1.Volume{{Name: "www", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// restrictedPodContext and restrictedContext are what the restricted Pod
// Security Standard asks of a pod and of each of its containers.
func restrictedPodContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptrTo(true),
		RunAsUser:      ptrTo[int64](restrictedUID),
		RunAsGroup:     ptrTo[int64](restrictedUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptrTo(false),
		ReadOnlyRootFilesystem:   ptrTo(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func containerStates(pod *corev1.Pod) string {
	var parts []string
	for _, s := range pod.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting: %s %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message))
		case s.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated: %s (exit %d)", s.Name, s.State.Terminated.Reason, s.State.Terminated.ExitCode))
		case s.State.Running != nil:
			parts = append(parts, s.Name+" running")
		}
	}
	if len(parts) == 0 {
		return "no container status"
	}
	return strings.Join(parts, "; ")
}

func get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}

func ptrTo[T any](v T) *T { return &v }
