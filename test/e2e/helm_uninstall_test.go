//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/vk"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// TestHelmUninstall: `helm uninstall` of a release whose node runs a pod
// leaves nothing behind. The chart's pre-delete hook deletes the running
// pod while sluice-vk runs (its job cancelled), scales sluice-vk to zero,
// deletes the node and the leader Lease; Helm deletes the rest. Checked
// afterwards: no node, no node Lease (kube-node-lease), no leader Lease, no
// ClusterRole or ClusterRoleBinding of the release (the hook's included),
// nothing of the release in its namespace (Deployment, ReplicaSet, pods,
// Job, Service, ConfigMap, Secret, ServiceAccount, Role, RoleBinding,
// Lease), in kube-node-lease or in the tenant namespace, and no pod on the
// node.
func TestHelmUninstall(t *testing.T) {
	r := installChart(t, true, "leaderElection:\n  enabled: true\n")
	e := r.e
	ctx := context.Background()

	e.create(e.pod("sleeper", "sleep 600"))
	e.waitPod("sleeper", "Running", 120*time.Second, phaseIs(corev1.PodRunning))

	start := time.Now()
	out, err := r.run("uninstall", r.name, "--namespace", r.ns, "--wait", "--timeout", "180s")
	r.uninstalled = true
	if err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	t.Logf("helm uninstall with a running pod: %s", time.Since(start).Round(100*time.Millisecond))

	gone := func(what string, err error) {
		t.Helper()
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: %v; want it gone", what, err)
		}
	}
	_, err = e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	gone("node "+e.node, err)
	_, err = e.client.CoordinationV1().Leases(r.ns).Get(ctx, vk.LeaseName(e.node), metav1.GetOptions{})
	gone("leader Lease", err)
	// the node Lease is owned by the node: the garbage collector takes it
	e.waitFor("the node Lease gone", 60*time.Second, func() bool {
		_, err := e.client.CoordinationV1().Leases("kube-node-lease").Get(ctx, e.node, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if l, err := e.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + e.node}); err != nil || len(l.Items) > 0 {
		t.Errorf("pods on the node: %v, %v; want none", l, err)
	}

	// sluice-vk's pods go after helm returns
	e.waitFor("sluice-vk's pods gone", 60*time.Second, func() bool {
		l, err := e.client.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	var left []string
	for _, l := range leftovers(ctx, e.client, r.ns, e.ns) {
		// the release's namespace holds nothing but what Kubernetes puts in
		// every namespace and the pull Secret; elsewhere, nothing named for
		// the release
		ns, name, _ := strings.Cut(l.name, "/")
		switch {
		case ns == r.ns && !(l.kind == "ConfigMap" && name == "kube-root-ca.crt") && !(l.kind == "ServiceAccount" && name == "default") &&
			!(l.kind == "Secret" && name == pullSecret): // the test's own, made before helm install
		case strings.HasPrefix(name, r.name):
		default:
			continue
		}
		left = append(left, l.kind+" "+l.name)
	}
	if len(left) > 0 {
		t.Errorf("left after helm uninstall:\n%s", strings.Join(left, "\n"))
	}
}

// object is one object leftovers found: its kind and [namespace/]name.
type object struct{ kind, name string }

// leftovers lists what a release may leave: ClusterRoles and
// ClusterRoleBindings; Roles and RoleBindings in kube-node-lease and in
// namespaces; Deployments, ReplicaSets, Jobs, Services, Leases, Secrets,
// ConfigMaps, ServiceAccounts and pods in namespaces.
func leftovers(ctx context.Context, c kubernetes.Interface, namespaces ...string) []object {
	var out []object
	add := func(kind, ns string, list runtime.Object, err error) {
		names, err := itemNames(list, err)
		if err != nil {
			out = append(out, object{kind, "list failed: " + err.Error()})
		}
		for _, n := range names {
			if ns != "" {
				n = ns + "/" + n
			}
			out = append(out, object{kind, n})
		}
	}
	o := metav1.ListOptions{}
	crs, err := c.RbacV1().ClusterRoles().List(ctx, o)
	add("ClusterRole", "", crs, err)
	crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, o)
	add("ClusterRoleBinding", "", crbs, err)
	for _, ns := range append([]string{"kube-node-lease"}, namespaces...) {
		roles, err := c.RbacV1().Roles(ns).List(ctx, o)
		add("Role", ns, roles, err)
		rbs, err := c.RbacV1().RoleBindings(ns).List(ctx, o)
		add("RoleBinding", ns, rbs, err)
	}
	for _, ns := range namespaces {
		ds, err := c.AppsV1().Deployments(ns).List(ctx, o)
		add("Deployment", ns, ds, err)
		rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, o)
		add("ReplicaSet", ns, rss, err)
		jobs, err := c.BatchV1().Jobs(ns).List(ctx, o)
		add("Job", ns, jobs, err)
		svcs, err := c.CoreV1().Services(ns).List(ctx, o)
		add("Service", ns, svcs, err)
		leases, err := c.CoordinationV1().Leases(ns).List(ctx, o)
		add("Lease", ns, leases, err)
		secrets, err := c.CoreV1().Secrets(ns).List(ctx, o)
		add("Secret", ns, secrets, err)
		cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, o)
		add("ConfigMap", ns, cms, err)
		sas, err := c.CoreV1().ServiceAccounts(ns).List(ctx, o)
		add("ServiceAccount", ns, sas, err)
		pods, err := c.CoreV1().Pods(ns).List(ctx, o)
		add("Pod", ns, pods, err)
	}
	return out
}

// itemNames returns the names of a list's items, and err.
func itemNames(list runtime.Object, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		if m, err := meta.Accessor(it); err == nil {
			out = append(out, m.GetName())
		}
	}
	return out, nil
}
