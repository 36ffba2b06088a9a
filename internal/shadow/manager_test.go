package shadow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// newFake is a fake clientset that, like the API server, gives created
// objects a UID and Services a ClusterIP.
func newFake(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int32
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object)
		if ok && obj.GetUID() == "" {
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n.Add(1))))
		}
		if svc, ok := obj.(*corev1.Service); ok && svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = fmt.Sprintf("10.96.0.%d", n.Add(1))
		}
		return false, nil, nil
	})
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func newManager(t *testing.T, c *fake.Clientset, s Spec) (*Manager, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(100)
	return &Manager{Client: c, Spec: s, Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), Recorder: rec}, rec
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// writes are the actions that change something.
func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
	}
	return out
}

func webPod() *corev1.Pod {
	return testPod("science", "web", withPorts("8080"), withAnnotation(annotations.ReverseForwards, "redis:6379"))
}

func TestEnsureCreates(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, rec := newManager(t, c, testSpec())
	pod := webPod()
	ref, err := m.Ensure(ctx, pod)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	want := Ref{Namespace: "science-shadow", Name: Name(pod), PodUID: testUID, Forward: true, Reverse: true, Service: true}
	if *ref != want {
		t.Errorf("Ref = %+v; want %+v", *ref, want)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "science-shadow", metav1.GetOptions{})
	wantNS := map[string]string{
		"app.kubernetes.io/managed-by":               "sluice",
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}
	if err != nil || !maps.Equal(ns.Labels, wantNS) {
		t.Errorf("namespace science-shadow: %v, labels %v; want %v", err, ns.GetLabels(), wantNS)
	}
	d, err := c.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get deployment: %v", err)
	}
	svc, err := c.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get service: %v", err)
	}
	cm, err := c.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name+"-node", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap: %v", err)
	}
	for what, o := range map[string]metav1.Object{"service": svc, "configmap": cm} {
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != "Deployment" || refs[0].Name != d.Name || refs[0].UID != d.UID || d.UID == "" {
			t.Errorf("%s owners %+v; want the Deployment %s (uid %s)", what, refs, d.Name, d.UID)
		}
	}
	if ev := events(rec); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal ShadowCreated created shadow science-shadow/") {
		t.Errorf("events %q; want one Normal ShadowCreated", ev)
	}
}

// TestEnsureKeepsNamespace: a shadow namespace sluice did not create, which
// the operator trusts, keeps its labels (its owner chose its Pod Security
// level), and is not written.
func TestEnsureKeepsNamespace(t *testing.T) {
	ctx := context.Background()
	theirs := map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "team": "science"}
	c := newFake(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "science-shadow", Labels: maps.Clone(theirs)}})
	s := testSpec()
	s.TrustedNamespaces = []string{"science-shadow"}
	m, _ := newManager(t, c, s)
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "science-shadow", metav1.GetOptions{})
	if err != nil || !maps.Equal(ns.Labels, theirs) {
		t.Errorf("namespace science-shadow: %v, labels %v; want %v untouched", err, ns.GetLabels(), theirs)
	}
	for _, w := range writes(c.Actions()) {
		if strings.HasSuffix(w, " namespaces ") {
			t.Errorf("Ensure wrote the namespace: %s", w)
		}
	}
}

func TestEnsureIdempotent(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, rec := newManager(t, c, testSpec())
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if err := m.SetNode(ctx, pod, "node1", "42", ""); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	events(rec)
	c.ClearActions()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	// Creates are tried (and find the objects); nothing is updated.
	for _, w := range writes(c.Actions()) {
		if !strings.HasPrefix(w, "create ") {
			t.Errorf("second Ensure wrote: %s", w)
		}
	}
	if ev := events(rec); len(ev) != 0 {
		t.Errorf("second Ensure recorded %q", ev)
	}
	cm, err := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(pod)+"-node", metav1.GetOptions{})
	if err != nil || cm.Data["node"] != "node1" {
		t.Errorf("node after a second Ensure: %v %v; want node1 kept", cm.GetName(), err)
	}
}

func TestEnsureUpdates(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, _ := newManager(t, c, testSpec())
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if err := m.SetNode(ctx, pod, "node1", "42", ""); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	before, _ := c.CoreV1().Services("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{})
	m.Spec.TunnelImage = "ghcr.io/sluice-hpc/sluice-tunnel:v2"
	m.Spec.LoginPort = 22
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure after a change: %v", err)
	}
	d, _ := c.AppsV1().Deployments("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{})
	for _, ct := range d.Spec.Template.Spec.Containers {
		if ct.Image != "ghcr.io/sluice-hpc/sluice-tunnel:v2" || !slicesContain(ct.Args, "--login=10.251.1.2:22") {
			t.Errorf("%s: image %s args %q; want the new image and port", ct.Name, ct.Image, ct.Args)
		}
	}
	after, _ := c.CoreV1().Services("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{})
	if after.Spec.ClusterIP != before.Spec.ClusterIP || after.UID != before.UID {
		t.Errorf("service changed identity: ClusterIP %s → %s", before.Spec.ClusterIP, after.Spec.ClusterIP)
	}
	cm, _ := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(pod)+"-node", metav1.GetOptions{})
	if cm.Data["node"] != "node1" {
		t.Errorf("node %q after an update; want node1 kept", cm.Data["node"])
	}
}

func TestEnsureLeavesOthersAlone(t *testing.T) {
	ctx := context.Background()
	pod := webPod()
	theirs := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "science-shadow", Name: Name(pod),
		Labels: map[string]string{"app": "theirs"}}}
	c := newFake(theirs)
	m, _ := newManager(t, c, testSpec())
	_, err := m.Ensure(ctx, pod)
	if !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Ensure = %v; want ErrNotOurs", err)
	}
	d, _ := c.AppsV1().Deployments("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{})
	if d.Labels["app"] != "theirs" || len(d.Spec.Template.Spec.Containers) != 0 {
		t.Errorf("Ensure changed a Deployment that is not a shadow: %+v", d.ObjectMeta)
	}
	// Another pod's shadow (same name, other UID) is not this one's either.
	other := pod.DeepCopy()
	objs, _ := testSpec().Build(other)
	objs.Deployment.Labels[LabelPodUID] = "other"
	c = newFake(objs.Deployment)
	m, _ = newManager(t, c, testSpec())
	if _, err := m.Ensure(ctx, pod); !errors.Is(err, ErrNotOurs) {
		t.Errorf("Ensure over another pod's shadow = %v; want ErrNotOurs", err)
	}
}

func TestEnsureNothingWanted(t *testing.T) {
	c := newFake()
	m, _ := newManager(t, c, testSpec())
	ref, err := m.Ensure(context.Background(), testPod("science", "p", withPorts("53/UDP")))
	if ref != nil || err != nil {
		t.Errorf("Ensure = %v, %v; want nil, nil", ref, err)
	}
	if len(c.Actions()) != 0 {
		t.Errorf("Ensure of a pod without a shadow called the API: %v", c.Actions())
	}
}

func TestEnsurePodError(t *testing.T) {
	m, _ := newManager(t, newFake(), testSpec())
	_, err := m.Ensure(context.Background(), testPod(strings.Repeat("n", 60), "p", withPorts("80")))
	var perr *jobscript.PodError
	if !errors.As(err, &perr) {
		t.Errorf("Ensure = %v; want a *PodError", err)
	}
}

func TestSetNode(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, _ := newManager(t, c, testSpec())
	pod := webPod()
	if err := m.SetNode(ctx, pod, "node1", "42", ""); !apierrors.IsNotFound(err) {
		t.Errorf("SetNode before Ensure = %v; want NotFound", err)
	}
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	for _, node := range []string{"node1", "cn-0042.cluster.example.org", "gpu_01", "10.251.2.2", "fd00::5", ""} {
		if err := m.SetNode(ctx, pod, node, "1234_5", ""); err != nil {
			t.Errorf("SetNode(%q): %v", node, err)
			continue
		}
		cm, _ := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(pod)+"-node", metav1.GetOptions{})
		if cm.Data["node"] != node || cm.Data["job"] != "1234_5" || cm.Labels[LabelShadow] != Name(pod) {
			t.Errorf("after SetNode(%q): data %v labels %v", node, cm.Data, cm.Labels)
		}
	}
	// The socket directory, named from the pod's salt, reaches the shadow
	// with the node.
	const dir = "/tmp/sluice/d75a550f2954bd4f5c6fcf5bb401c235"
	if err := m.SetNode(ctx, pod, "node1", "42", dir); err != nil {
		t.Fatalf("SetNode with a socket directory: %v", err)
	}
	cm, _ := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(pod)+"-node", metav1.GetOptions{})
	if cm.Data[SocketDirKey] != dir {
		t.Errorf("after SetNode with a socket directory: data %v", cm.Data)
	}
	c.ClearActions()
	for _, node := range []string{"-oProxyCommand=x", "node1;reboot", "node 1", "node1\n", "fe80::1%eth0", strings.Repeat("a", 64)} {
		if err := m.SetNode(ctx, pod, node, "1", ""); err == nil {
			t.Errorf("SetNode(%q) accepted it", node)
		}
	}
	for _, job := range []string{"1;reboot", "-1", "12 3", "1_", "a"} {
		if err := m.SetNode(ctx, pod, "node1", job, ""); err == nil {
			t.Errorf("SetNode with job %q accepted it", job)
		}
	}
	for _, dir := range []string{"tmp/x", "/tmp/a b", "/tmp/x\n", "/tmp/../x", "/tmp/a:b", "/"} {
		if err := m.SetNode(ctx, pod, "node1", "1", dir); err == nil {
			t.Errorf("SetNode with socket directory %q accepted it", dir)
		}
	}
	if len(c.Actions()) != 0 {
		t.Errorf("a refused node reached the API: %v", c.Actions())
	}
}

func shadowPodObject(pod *corev1.Pod, ns, name, ip string, phase corev1.PodPhase, created int64, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.Unix(created, 0),
			Labels: map[string]string{LabelShadow: Name(pod), LabelPodUID: string(pod.UID)}},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip},
	}
	if deleting {
		now := metav1.Unix(created+100, 0)
		p.DeletionTimestamp = &now
		p.Finalizers = []string{"test"}
	}
	return p
}

func TestPodIP(t *testing.T) {
	ctx := context.Background()
	t.Run("service", func(t *testing.T) {
		c := newFake()
		m, _ := newManager(t, c, testSpec())
		pod := webPod()
		if ip, err := m.PodIP(ctx, pod); ip != "" || err != nil {
			t.Errorf("PodIP before Ensure = %q, %v; want \"\"", ip, err)
		}
		if _, err := m.Ensure(ctx, pod); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		svc, _ := c.CoreV1().Services("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{})
		if ip, err := m.PodIP(ctx, pod); err != nil || ip == "" || ip != svc.Spec.ClusterIP {
			t.Errorf("PodIP = %q, %v; want the ClusterIP %q", ip, err, svc.Spec.ClusterIP)
		}
		// once the shadow pod runs, its IP: Services selecting the pod
		// reach the forward tunnel there
		for _, sp := range []*corev1.Pod{
			shadowPodObject(pod, "science-shadow", "pending", "", corev1.PodPending, 100, false),
			shadowPodObject(pod, "science-shadow", "leaving", "10.244.0.5", corev1.PodRunning, 50, true),
		} {
			if _, err := c.CoreV1().Pods(sp.Namespace).Create(ctx, sp, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if ip, err := m.PodIP(ctx, pod); err != nil || ip != svc.Spec.ClusterIP {
			t.Errorf("PodIP with no running shadow pod = %q, %v; want the ClusterIP %q", ip, err, svc.Spec.ClusterIP)
		}
		running := shadowPodObject(pod, "science-shadow", "running", "10.244.0.9", corev1.PodRunning, 200, false)
		if _, err := c.CoreV1().Pods(running.Namespace).Create(ctx, running, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if ip, err := m.PodIP(ctx, pod); err != nil || ip != "10.244.0.9" {
			t.Errorf("PodIP = %q, %v; want the running shadow pod's 10.244.0.9", ip, err)
		}
	})
	t.Run("shadow pod", func(t *testing.T) {
		pod := testPod("science", "worker", withAnnotation(annotations.ReverseForwards, "redis:6379"))
		ns := "science-shadow"
		c := newFake(
			shadowPodObject(pod, ns, "old", "10.244.0.5", corev1.PodRunning, 100, true),
			shadowPodObject(pod, ns, "new", "10.244.0.7", corev1.PodRunning, 200, false),
			shadowPodObject(pod, ns, "newest", "", corev1.PodPending, 300, false),
		)
		m, _ := newManager(t, c, testSpec())
		if ip, err := m.PodIP(ctx, pod); err != nil || ip != "10.244.0.7" {
			t.Errorf("PodIP = %q, %v; want the running shadow pod's 10.244.0.7", ip, err)
		}
		other := testPod("science", "worker", withUID("11111111-2222-3333-4444-555555555555"),
			withAnnotation(annotations.ReverseForwards, "redis:6379"))
		if ip, err := m.PodIP(ctx, other); err != nil || ip != "" {
			t.Errorf("PodIP of a pod without shadow pod = %q, %v; want \"\"", ip, err)
		}
	})
	t.Run("tenant", func(t *testing.T) {
		s := testSpec()
		s.TenantNamespace = "hpc-tenant"
		c := newFake()
		m, _ := newManager(t, c, s)
		pod := webPod()
		if _, err := m.Ensure(ctx, pod); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		svc, err := c.CoreV1().Services("hpc-tenant").Get(ctx, Name(pod), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("no service in the tenant namespace: %v", err)
		}
		c.ClearActions()
		if ip, err := m.PodIP(ctx, pod); err != nil || ip != svc.Spec.ClusterIP {
			t.Errorf("PodIP = %q, %v; want %q from the tenant namespace", ip, err, svc.Spec.ClusterIP)
		}
		for _, a := range c.Actions() {
			if a.GetNamespace() != "hpc-tenant" {
				t.Errorf("PodIP looked in namespace %q", a.GetNamespace())
			}
		}
	})
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	m, _ := newManager(t, c, testSpec())
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	c.ClearActions()
	if err := m.Delete(ctx, pod); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, a := range c.Actions() {
		d, ok := a.(k8stesting.DeleteAction)
		if !ok {
			continue
		}
		if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
			t.Errorf("delete %s %s without foreground propagation", a.GetResource().Resource, d.GetName())
		}
	}
	if got := writes(c.Actions()); len(got) != 3 {
		t.Errorf("Delete wrote %v; want three deletions", got)
	}
	if _, err := c.AppsV1().Deployments("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment after Delete: %v", err)
	}
	if _, err := c.CoreV1().Services("science-shadow").Get(ctx, Name(pod), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service after Delete: %v", err)
	}
	if _, err := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(pod)+"-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap after Delete: %v", err)
	}
	if err := m.Delete(ctx, pod); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "science-shadow", metav1.GetOptions{}); err != nil {
		t.Errorf("Delete removed the namespace: %v", err)
	}
}

func TestCleanOrphans(t *testing.T) {
	ctx := context.Background()
	c := newFake()
	s := testSpec()
	m, _ := newManager(t, c, s)
	live := testPod("science", "live", withPorts("80"))
	gone := testPod("physics", "gone", withUID("22222222-2222-2222-2222-222222222222"), withPorts("80"))
	for _, p := range []*corev1.Pod{live, gone} {
		if _, err := m.Ensure(ctx, p); err != nil {
			t.Fatalf("Ensure %s: %v", p.Name, err)
		}
	}
	// A shadow of another virtual node, whose pod this node does not know.
	s.NodeName = "hpc-b"
	otherNode, _ := newManager(t, c, s)
	foreign := testPod("science", "foreign", withUID("33333333-3333-3333-3333-333333333333"), withPorts("80"))
	if _, err := otherNode.Ensure(ctx, foreign); err != nil {
		t.Fatalf("Ensure on hpc-b: %v", err)
	}
	c.ClearActions()
	n, err := m.CleanOrphans(ctx, func(uid string) bool { return uid == testUID })
	if err != nil || n != 3 {
		t.Fatalf("CleanOrphans = %d, %v; want 3 objects deleted", n, err)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() == "list" && a.GetNamespace() != "" {
			t.Errorf("an unconfined node listed namespace %q only", a.GetNamespace())
		}
	}
	if _, err := c.AppsV1().Deployments("physics-shadow").Get(ctx, Name(gone), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the orphan's deployment: %v; want it gone", err)
	}
	for _, p := range []*corev1.Pod{live, foreign} {
		if _, err := c.AppsV1().Deployments("science-shadow").Get(ctx, Name(p), metav1.GetOptions{}); err != nil {
			t.Errorf("shadow of %s: %v; want it kept", p.Name, err)
		}
		if _, err := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, Name(p)+"-node", metav1.GetOptions{}); err != nil {
			t.Errorf("node configmap of %s: %v; want it kept", p.Name, err)
		}
	}
	if n, err := m.CleanOrphans(ctx, func(uid string) bool { return uid == testUID }); n != 0 || err != nil {
		t.Errorf("second CleanOrphans = %d, %v; want 0", n, err)
	}
}

// TestSetNodeNudgesTheShadowPods: SetNode marks the shadow's live pods with
// JOB@NODE (so that their kubelet refreshes the mounted ConfigMap at once),
// leaves a pod being deleted and other shadows' pods alone, and patches a
// pod only when the mark changes.
func TestSetNodeNudgesTheShadowPods(t *testing.T) {
	ctx := context.Background()
	pod := webPod()
	name := Name(pod)
	shadowPod := func(podName, shadow, uid string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: "science-shadow",
			Labels: map[string]string{LabelShadow: shadow, LabelPodUID: uid}}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			p.Finalizers = []string{"test"}
		}
		return p
	}
	c := newFake(
		shadowPod("live", name, testUID, false),
		shadowPod("going", name, testUID, true),
		shadowPod("other", "other-shadow", "other-uid", false),
	)
	m, _ := newManager(t, c, testSpec())
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	mark := func(p string) string {
		got, err := c.CoreV1().Pods("science-shadow").Get(ctx, p, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod %s: %v", p, err)
		}
		return got.Annotations[annotationNodeOfJob]
	}
	if err := m.SetNode(ctx, pod, "node1", "42", ""); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	if got := mark("live"); got != "42@node1" {
		t.Errorf("live shadow pod marked %q; want 42@node1", got)
	}
	if got := mark("going"); got != "" {
		t.Errorf("shadow pod being deleted marked %q; want nothing", got)
	}
	if got := mark("other"); got != "" {
		t.Errorf("another shadow's pod marked %q; want nothing", got)
	}
	c.ClearActions()
	if err := m.SetNode(ctx, pod, "node1", "42", ""); err != nil {
		t.Fatalf("SetNode again: %v", err)
	}
	for _, w := range writes(c.Actions()) {
		if strings.Contains(w, "pods") {
			t.Errorf("SetNode with the same node patched a pod again: %s", w)
		}
	}
	if err := m.SetNode(ctx, pod, "", "", ""); err != nil {
		t.Fatalf("SetNode none: %v", err)
	}
	if got := mark("live"); got != "@" {
		t.Errorf("live shadow pod marked %q after the node is gone; want @", got)
	}
}
