package vk

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func obj(name, ns string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
}

// Uninstall deletes the node's pods, scales sluice-vk to zero, and only
// once no replica is left deletes the node and the leader Lease; the
// fake API server stands for the leader (it lets the pods go) and the
// Deployment controller (it removes sluice-vk's pods once scaled down).
func TestUninstallOrder(t *testing.T) {
	two := int32(2)
	vkLabels := map[string]string{"app.kubernetes.io/instance": "rel"}
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: obj("hpc", "", nil)},
		&corev1.Pod{ObjectMeta: obj("job-a", "tenant", nil), Spec: corev1.PodSpec{NodeName: "hpc"}},
		&corev1.Pod{ObjectMeta: obj("vk-1", "sluice", vkLabels), Spec: corev1.PodSpec{NodeName: "real"}},
		&appsv1.Deployment{ObjectMeta: obj("sluice", "sluice", nil), Spec: appsv1.DeploymentSpec{Replicas: &two}},
		&coordinationv1.Lease{ObjectMeta: obj(LeaseName("hpc"), "sluice", nil)},
	)
	var steps []string
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "delete", "patch":
			name := ""
			if n, ok := a.(interface{ GetName() string }); ok {
				name = n.GetName()
			}
			steps = append(steps, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
		}
		return false, nil, nil
	})
	// the fake's pod list ignores the field selector: sluice-vk's own pod
	// (on another node) must stay until the scale-down, so list it apart
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.ListAction)
		if fs := l.GetListRestrictions().Fields.String(); fs == "spec.nodeName=hpc" {
			objs, err := client.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "tenant")
			return true, objs, err
		}
		return false, nil, nil
	})
	// the Deployment controller: scaled to zero, its pod goes
	client.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !strings.Contains(string(a.(k8stesting.PatchAction).GetPatch()), `"replicas":0`) {
			t.Errorf("patch %s; want replicas 0", a.(k8stesting.PatchAction).GetPatch())
		}
		_ = client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "sluice", "vk-1")
		return false, nil, nil
	})

	u := Uninstall{Node: "hpc", Namespace: "sluice", Deployment: "sluice", Selector: "app.kubernetes.io/instance=rel",
		Poll: time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u.Run(ctx, client); err != nil {
		t.Fatalf("Run: %v", err)
	}
	// (the Deployment controller's deletion of vk-1 goes to the tracker,
	// not through the reactors)
	want := []string{"delete pods job-a", "patch deployments sluice", "delete nodes hpc", "delete leases " + LeaseName("hpc")}
	if strings.Join(steps, "; ") != strings.Join(want, "; ") {
		t.Errorf("steps %q; want %q", steps, want)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "hpc", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node: %v; want it gone", err)
	}
	d, err := client.AppsV1().Deployments("sluice").Get(ctx, "sluice", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 0 {
		t.Errorf("deployment %v, %v; want scaled to zero", d, err)
	}

	// again, with everything gone: nothing fails
	if err := u.Run(ctx, client); err != nil {
		t.Errorf("second Run: %v", err)
	}
}

// A pod the leader never lets go (no sluice-vk runs) keeps the node: Run
// fails when its time is up, naming what it waited for, and deletes nothing
// more.
func TestUninstallWaitsForPods(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: obj("hpc", "", nil)},
		&corev1.Pod{ObjectMeta: obj("job-a", "tenant", nil), Spec: corev1.PodSpec{NodeName: "hpc"}},
	)
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // a finalizer holds it
	})
	u := Uninstall{Node: "hpc", Namespace: "sluice", Deployment: "sluice", Selector: "x=y", Poll: time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := u.Run(ctx, client)
	if err == nil || !strings.Contains(err.Error(), "1 of the pods of node hpc still there") {
		t.Fatalf("Run: %v; want it to name the pod left", err)
	}
	if _, err := client.CoreV1().Nodes().Get(context.Background(), "hpc", metav1.GetOptions{}); err != nil {
		t.Errorf("node: %v; want it kept while a pod is bound to it", err)
	}
}
