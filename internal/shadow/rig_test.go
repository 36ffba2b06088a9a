//go:build rig

package shadow

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// rigClient is a client of the rig's API server.
func rigClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	return testrig.Load(t).Kube(t)
}

func rigSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// rigNamespaces names the namespace of a test's pods, prefix-SUFFIX, and
// creates the namespace of its credentials, prefix-cred-SUFFIX; both, with
// the shadow namespace sluice makes for the first, go when the test ends.
func rigNamespaces(t *testing.T, c kubernetes.Interface, prefix string) (sfx, podNS, credNS string) {
	t.Helper()
	sfx = rigSuffix()
	podNS, credNS = prefix+"-"+sfx, prefix+"-cred-"+sfx
	makeNamespace(t, c, credNS)
	deleteNamespaceAtEnd(t, c, podNS+ShadowSuffix)
	return sfx, podNS, credNS
}

// makeNamespace creates ns and deletes it when the test ends.
func makeNamespace(t *testing.T, c kubernetes.Interface, ns string) { testrig.MakeNamespace(t, c, ns) }

func deleteNamespaceAtEnd(t *testing.T, c kubernetes.Interface, ns string) {
	testrig.DeleteNamespaceAtEnd(t, c, ns)
}

// replicatingFrom creates testSpec's credentials in credNS, with a key that
// is no key (the tunnels are not started), and returns testSpec copying
// them from there.
func replicatingFrom(t *testing.T, c kubernetes.Interface, credNS string) Spec {
	t.Helper()
	ctx := context.Background()
	for _, create := range []func() error{
		func() error {
			_, err := c.CoreV1().Secrets(credNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hpc-ssh-key"},
				Type: corev1.SecretTypeSSHAuth, Data: map[string][]byte{"ssh-privatekey": []byte("not a real key")}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(credNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hpc-known-hosts"},
				Data: map[string]string{"known_hosts": "10.251.1.2 ssh-ed25519 AAAA"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(credNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hpc-node-keys"},
				Data: map[string]string{"known_hosts": "node1 ssh-ed25519 BBBB"}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatalf("create credential: %v", err)
		}
	}
	s := testSpec()
	s.ReplicateCredentials = true
	s.CredentialsNamespace = credNS
	return s
}

// eventually polls cond every 200ms until it holds or d has passed.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last error: %v)", what, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func rigManager(t *testing.T, c kubernetes.Interface, s Spec) *Manager {
	return &Manager{Client: c, Spec: s, Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
}

// TestRigShadow makes the shadow of a pod with a 253-character name on the
// rig's API server, so that real validation judges the objects: a Service
// gets a ClusterIP that PodIP returns, SetNode reaches the ConfigMap, the
// Deployment makes a shadow pod, and Delete removes everything.
func TestRigShadow(t *testing.T) {
	c := rigClient(t)
	ctx := context.Background()
	sfx, podNS, credNS := rigNamespaces(t, c, "shadow-rig")
	s := replicatingFrom(t, c, credNS)
	s.NodeName = "rig-shadow-" + sfx
	m := rigManager(t, c, s)
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	pod := testPod(podNS, long, withUID("6f1c2d3e-4a5b-4c6d-8e7f-"+sfx+"000000"),
		withPorts("http=8080", "9090", "5353/UDP"),
		withAnnotation(annotations.ReverseForwards, "redis:6379 kubernetes.default.svc.cluster.local:443"))

	ref, err := m.Ensure(ctx, pod)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if ref.Namespace != podNS+ShadowSuffix || !ref.Service || !ref.Forward || !ref.Reverse {
		t.Fatalf("Ref = %+v", ref)
	}
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	d, err := c.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deployment: %v", err)
	}
	if d.Annotations[AnnotationPod] != podNS+"/"+long {
		t.Errorf("deployment annotation %s = %q; want the full pod name", AnnotationPod, d.Annotations[AnnotationPod])
	}
	key, err := c.CoreV1().Secrets(ref.Namespace).Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if err != nil || key.Annotations[AnnotationCopyOf] != credNS+"/hpc-ssh-key" {
		t.Errorf("key copy: %v %v", err, key.GetAnnotations())
	}

	svc, err := c.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("service: %v", err)
	}
	if _, err := netip.ParseAddr(svc.Spec.ClusterIP); err != nil {
		t.Fatalf("service ClusterIP %q: %v", svc.Spec.ClusterIP, err)
	}
	ip, err := m.PodIP(ctx, pod)
	if err != nil || ip != svc.Spec.ClusterIP {
		t.Errorf("PodIP = %q, %v; want the ClusterIP %s", ip, err, svc.Spec.ClusterIP)
	}
	t.Logf("shadow %s/%s, ClusterIP %s", ref.Namespace, ref.Name, ip)

	const socketDir = "/tmp/sluice-sock/d75a550f2954bd4f5c6fcf5bb401c235"
	if err := m.SetNode(ctx, pod, "node1", "42", socketDir); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	cm, err := c.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, NodeConfigMap(ref.Name), metav1.GetOptions{})
	if err != nil || cm.Data[NodeKey] != "node1" || cm.Data[SocketDirKey] != socketDir {
		t.Errorf("node configmap after SetNode: %v %v", err, cm.Data)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != d.UID {
		t.Errorf("node configmap owners %+v; want the Deployment", cm.OwnerReferences)
	}

	// The controller manager makes the shadow pod from the template, in a
	// namespace enforcing the restricted standard: admitted.
	ns, err := c.CoreV1().Namespaces().Get(ctx, ref.Namespace, metav1.GetOptions{})
	if err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("shadow namespace: %v, labels %v; want it to enforce restricted", err, ns.GetLabels())
	}
	eventually(t, 60*time.Second, "shadow pod", func() (bool, error) {
		p, err := m.ShadowPod(ctx, pod)
		return p != nil, err
	})
	checkAdmission(t, c, ref.Namespace, d.Spec.Template)

	if err := m.Delete(ctx, pod); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	gone(t, c, ref.Namespace, ref.Name)
}

// checkAdmission creates the shadow pod of tpl in ns, which enforces the
// restricted standard, as a server-side dry run: the API server's
// PodSecurity admission admits it, and refuses it with a container that
// may escalate its privileges.
func checkAdmission(t *testing.T, c kubernetes.Interface, ns string, tpl corev1.PodTemplateSpec) {
	t.Helper()
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	p := &corev1.Pod{ObjectMeta: *tpl.ObjectMeta.DeepCopy(), Spec: *tpl.Spec.DeepCopy()}
	p.GenerateName = "admission-"
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, dry); err != nil {
		t.Errorf("dry-run create of the shadow pod in %s: %v", ns, err)
	}
	yes := true
	p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes
	_, err := c.CoreV1().Pods(ns).Create(ctx, p, dry)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("dry-run create of a shadow pod allowing privilege escalation = %v; want PodSecurity to forbid it", err)
	}
}

// gone waits until the shadow name in ns has no Deployment, Service or
// node ConfigMap left.
func gone(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 2*time.Minute, "shadow deleted", func() (bool, error) {
		_, errD := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		_, errS := c.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		_, errC := c.CoreV1().ConfigMaps(ns).Get(ctx, NodeConfigMap(name), metav1.GetOptions{})
		for _, err := range []error{errD, errS, errC} {
			if !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("still there (or %v)", err)
			}
		}
		return true, nil
	})
}

// TestRigConfinedKept makes, on a node confined to a tenant namespace, the
// shadow of a real pod of that namespace keeping an init container that
// mounts a ConfigMap: the API server accepts the carried container, the
// pod owns its shadow, and CleanOrphans removes the shadow once the pod is
// no longer live.
func TestRigConfinedKept(t *testing.T) {
	c := rigClient(t)
	ctx := context.Background()
	sfx := rigSuffix()
	tenant := "shadow-tenant-" + sfx
	makeNamespace(t, c, tenant)

	s := testSpec()
	s.NodeName = "rig-confined-" + sfx
	s.TenantNamespace = tenant
	m := rigManager(t, c, s)

	spec := testPod(tenant, "kept", withPorts("8080"),
		withInit(corev1.Container{Name: "fetch", Image: "busybox", Command: []string{"true"},
			VolumeMounts: []corev1.VolumeMount{mount("conf", "/conf")}}),
		withVolume(configMapVolume("conf", "settings")),
		withAnnotation(annotations.DisableOffloadInitContainers, "fetch"),
		withAnnotation(annotations.ReverseForwards, "redis:6379"))
	spec.UID = ""
	spec.Spec.NodeName = ""
	// Nothing schedules the pod itself: it only has to exist, as the owner.
	spec.Spec.NodeSelector = map[string]string{"sluice.io/test": "nowhere"}
	pod, err := c.CoreV1().Pods(tenant).Create(ctx, spec, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}

	ref, err := m.Ensure(ctx, pod)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	d, err := c.AppsV1().Deployments(tenant).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deployment: %v", err)
	}
	if got := containerNames(d.Spec.Template.Spec.InitContainers); len(got) != 1 || got[0] != "fetch" {
		t.Errorf("shadow init containers %v; want fetch", got)
	}
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != pod.UID {
		t.Errorf("deployment owners %+v; want the pod %s", d.OwnerReferences, pod.UID)
	}
	eventually(t, 60*time.Second, "shadow pod", func() (bool, error) {
		p, err := m.ShadowPod(ctx, pod)
		return p != nil, err
	})

	// The pod is still live: nothing is an orphan.
	if n, err := m.CleanOrphans(ctx, func(uid string) bool { return uid == string(pod.UID) }); n != 0 || err != nil {
		t.Fatalf("CleanOrphans with the pod live = %d, %v; want 0", n, err)
	}
	n, err := m.CleanOrphans(ctx, func(string) bool { return false })
	if err != nil || n == 0 {
		t.Fatalf("CleanOrphans = %d, %v; want the shadow's objects deleted", n, err)
	}
	gone(t, c, tenant, ref.Name)
}
