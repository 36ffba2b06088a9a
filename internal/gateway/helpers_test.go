package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	testNode   = "hpc-a"
	testCredNS = "sluice-system"
	socketDir  = "/tmp/sluice-sock/p-0123456789abcdef"
)

// gatewaySpec is a shadow Spec of testNode with the gateway on.
func gatewaySpec() shadow.Spec {
	return shadow.Spec{
		NodeName:             testNode,
		LoginHost:            "10.251.1.2",
		LoginPort:            2222,
		User:                 "alice",
		KeySecret:            "hpc-ssh-key",
		LoginHostKeys:        "hpc-known-hosts",
		NodeHostKeys:         "hpc-node-keys",
		ForwardTarget:        "node",
		TunnelImage:          "ghcr.io/sluice-hpc/sluice-tunnel:v1",
		SocketDirRoot:        "/tmp/sluice-sock",
		CredentialsNamespace: testCredNS,
		GatewayAddress:       "sluice-gateway.sluice-system.svc:2222",
		GatewayHostKeys:      "sluice-gateway-host-keys",
	}
}

// world is a fake API server holding one offloaded pod's shadow as
// internal/shadow's Manager makes it, its ReplicaSet and its pod (the
// controllers the fake lacks), and a TokenReview that answers per token.
type world struct {
	t       *testing.T
	client  *fake.Clientset
	spec    shadow.Spec
	pod     *corev1.Pod // the offloaded pod
	shadow  *corev1.Pod // its shadow's pod
	deploy  *appsv1.Deployment
	reviews map[string]authv1.TokenReviewStatus
	calls   atomic.Int32 // TokenReviews made
	uids    atomic.Int32
}

func newWorld(t *testing.T, spec shadow.Spec) *world {
	t.Helper()
	return newWorldOf(t, spec, nil)
}

// newWorldOf is newWorld with the offloaded pod changed by edit first.
func newWorldOf(t *testing.T, spec shadow.Spec, edit func(*corev1.Pod)) *world {
	t.Helper()
	w := &world{t: t, client: fake.NewClientset(), spec: spec, reviews: map[string]authv1.TokenReviewStatus{}}
	// The fake sets no UIDs: the API server does.
	w.client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, ok := a.(k8stesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		if m, err := meta.Accessor(obj.GetObject()); err == nil && m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", w.uids.Add(1))))
		}
		return false, nil, nil
	})
	w.client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		w.calls.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authv1.TokenReview)
		if tr.Spec.Token == "api-down" {
			return true, nil, fmt.Errorf("connection refused")
		}
		out := tr.DeepCopy()
		out.Status = w.reviews[tr.Spec.Token]
		return true, out, nil
	})
	ctx := context.Background()
	if _, err := w.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testCredNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "6f1c2d3e-4a5b-4c6d-8e7f-000000000001",
			Annotations: map[string]string{annotations.ReverseForwards: "redis:6379 5432:db:5432", annotations.ReverseSocksPort: "1080"}},
		Spec: corev1.PodSpec{NodeName: testNode, Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}}}},
	}
	if edit != nil {
		edit(w.pod)
	}
	m := &shadow.Manager{Client: w.client, Spec: spec, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ref, err := m.Ensure(ctx, w.pod)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if err := m.SetNode(ctx, w.pod, "node1", "4242", socketDir); err != nil {
		t.Fatalf("SetNode: %v", err)
	}
	if w.deploy, err = w.client.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	w.shadow = w.runShadow(w.deploy, "a")
	return w
}

// runShadow makes what the Deployment controller and the ReplicaSet
// controller would: a ReplicaSet of d and a pod of it, suffix naming them.
func (w *world) runShadow(d *appsv1.Deployment, suffix string) *corev1.Pod {
	w.t.Helper()
	ctx := context.Background()
	yes := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-" + suffix,
		Labels:          d.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}}}
	rs, err := w.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: rs.Name + "-x", Labels: d.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	p.Spec.ServiceAccountName = "default" // as the API server defaults it
	if p, err = w.client.CoreV1().Pods(d.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// token registers a token the API server accepts for pod p (bound to it,
// its ServiceAccount sa) and returns it: name, made unlike any word of a
// refusal unless it is a JWT already.
func (w *world) token(name string, p *corev1.Pod, sa string) string {
	if !strings.HasPrefix(name, "eyJ") {
		name = "T0k3n-" + name
	}
	w.reviews[name] = authv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     []string{Audience},
		User: authv1.UserInfo{
			Username: "system:serviceaccount:" + p.Namespace + ":" + sa,
			Extra: map[string]authv1.ExtraValue{
				extraPodName: {p.Name},
				extraPodUID:  {string(p.UID)},
			},
		},
	}
	return name
}

func (w *world) authenticator(scope ShadowScope) *TokenAuthenticator {
	w.t.Helper()
	a, err := NewTokenAuthenticator(TokenConfig{Client: w.client, Shadows: scope})
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

func defaultScope() ShadowScope {
	return ShadowScope{Node: testNode, CredentialsNamespace: testCredNS}
}

func (w *world) deletePod(p *corev1.Pod) {
	w.t.Helper()
	if err := w.client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) deleteRecord(ns string) {
	w.t.Helper()
	if err := w.client.CoreV1().ConfigMaps(testCredNS).Delete(context.Background(), shadow.RecordName(ns), metav1.DeleteOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) updateDeployment() {
	w.t.Helper()
	d, err := w.client.AppsV1().Deployments(w.deploy.Namespace).Update(context.Background(), w.deploy, metav1.UpdateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.deploy = d
}

// strayPod makes a pod that no shadow's ReplicaSet made in the shadow's
// namespace, with labels, running as the shadow's ServiceAccount.
func (w *world) strayPod(name string, labels map[string]string) *corev1.Pod {
	w.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.shadow.Namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	p, err := w.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// updateShadow writes the changes made to w.shadow and returns it.
func (w *world) updateShadow() *corev1.Pod {
	w.t.Helper()
	p, err := w.client.CoreV1().Pods(w.shadow.Namespace).Update(context.Background(), w.shadow, metav1.UpdateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	w.shadow = p
	return p
}
