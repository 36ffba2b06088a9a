//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestAdmissionPolicyConfinesServiceAccount: the chart's
// ValidatingAdmissionPolicies (admissionPolicy.enabled), applied to the
// rig's API server, let sluice-vk's service account (impersonated, with
// RBAC rights on every pod of its namespace) write the pods bound to its
// node and nudge its shadow pods, and refuse the same writes to a pod bound
// to another node, a relabelled shadow pod, and a token bound to no pod.
func TestAdmissionPolicyConfinesServiceAccount(t *testing.T) {
	_, kubeconfig, admin := rigCluster(t)
	ctx := context.Background()
	s := suffix()
	ns, release, node := "e2e-vap-"+s, "vap-"+s, "e2e-vap-"+s
	sa := release + "-sluice" // the chart's service account: the full name

	out, err := exec.Command(helmBinary(t), "template", release, filepath.Join(repoRoot(), "charts", "sluice"),
		"--namespace", ns, "-f", filepath.Join(repoRoot(), "test", "chart", "testdata", "values", "default.yaml"),
		"--set", "config.NodeName="+node, "--set", "admissionPolicy.enabled=true",
		"--show-only", "templates/admissionpolicy.yaml").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var policies []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		vap := admin.AdmissionregistrationV1()
		switch o := obj.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			policies = append(policies, o.Name)
			if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create policy %s: %v", o.Name, err)
			}
			t.Cleanup(func() { _ = vap.ValidatingAdmissionPolicies().Delete(ctx, o.Name, metav1.DeleteOptions{}) })
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create binding %s: %v", o.Name, err)
			}
			t.Cleanup(func() { _ = vap.ValidatingAdmissionPolicyBindings().Delete(ctx, o.Name, metav1.DeleteOptions{}) })
		default:
			t.Fatalf("unexpected %T in templates/admissionpolicy.yaml", obj)
		}
	}
	if len(policies) != 2 {
		t.Fatalf("%d policies rendered; want 2 (pods, tokens)", len(policies))
	}
	// the API server type-checks each expression against the pod and
	// TokenRequest schemas: a misspelt field is a warning there
	for _, name := range policies {
		deadline := time.Now().Add(20 * time.Second)
		for {
			p, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.ObservedGeneration == p.Generation {
				if tc := p.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
					t.Errorf("policy %s: type-checking warnings %+v", name, tc.ExpressionWarnings)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("policy %s not type-checked after 20 s", name)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	vk := confinedClient(t, admin, kubeconfig, ns, sa)
	here := boundPod(t, admin, ns, "here", node, sa, nil)
	elsewhere := boundPod(t, admin, ns, "elsewhere", "other-"+node, sa, nil)
	shadowPod := boundPod(t, admin, ns, "shadow", "other-"+node, sa,
		map[string]string{shadow.LabelNode: node, shadow.LabelManagedBy: shadow.ManagedBy})

	pods := vk.CoreV1().Pods(ns)
	annotate := []byte(`{"metadata":{"annotations":{"sluice.io/test":"x"}}}`)
	patch := func(name string, body []byte, sub ...string) error {
		_, err := pods.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, sub...)
		return err
	}
	// the policies are compiled a moment after they are made
	deadline := time.Now().Add(20 * time.Second)
	for err := patch(elsewhere.Name, annotate); err == nil; err = patch(elsewhere.Name, annotate) {
		if time.Now().After(deadline) {
			t.Fatal("a patch of a pod bound to another node still passes 20 s after the policies were made")
		}
		time.Sleep(250 * time.Millisecond)
	}
	refused(t, "patch of a pod bound to another node", patch(elsewhere.Name, annotate), "bound to node "+node)
	condition := []byte(`{"status":{"conditions":[{"type":"sluice.io/test","status":"True"}]}}`)
	refused(t, "status patch of a pod bound to another node", patch(elsewhere.Name, condition, "status"), "bound to node "+node)
	refused(t, "relabelling of a shadow pod", patch(shadowPod.Name, []byte(`{"metadata":{"labels":{"x":"y"}}}`)), "labels of a shadow pod")
	refused(t, "delete of a shadow pod", pods.Delete(ctx, shadowPod.Name, metav1.DeleteOptions{}), "bound to node "+node)
	refused(t, "delete of a pod bound to another node", pods.Delete(ctx, elsewhere.Name, metav1.DeleteOptions{}), "bound to node "+node)

	token := func(ref *authenticationv1.BoundObjectReference) error {
		_, err := vk.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{})
		return err
	}
	// each policy is compiled on its own: the tokens' one may start later
	// than the pods' one awaited above
	deadline = time.Now().Add(20 * time.Second)
	for err := token(nil); err == nil; err = token(nil) {
		if time.Now().After(deadline) {
			t.Fatal("a token bound to no pod still passes 20 s after the policies were made")
		}
		time.Sleep(250 * time.Millisecond)
	}
	refused(t, "token bound to no pod", token(nil), "bound to a pod")

	for what, err := range map[string]error{
		"patch of a pod bound to the node":        patch(here.Name, annotate),
		"status patch of a pod bound to the node": patch(here.Name, condition, "status"),
		"nudge of a shadow pod of the node":       patch(shadowPod.Name, annotate),
		"status patch of a shadow pod":            patch(shadowPod.Name, condition, "status"),
		"token bound to a pod":                    token(&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: here.Name, UID: here.UID}),
	} {
		if err != nil {
			t.Errorf("%s refused: %v", what, err)
		}
	}
	grace := int64(0)
	if err := pods.Delete(ctx, here.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Errorf("delete of a pod bound to the node refused: %v", err)
	}
}

// refused checks that err is the policies' refusal, with want in its
// message.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s passed; want it refused", what)
	case !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err), !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v; want a refusal of the admission policy saying %q", what, err, want)
	}
}

// confinedClient makes namespace ns, the service account sa and a Role
// granting it every write sluice-vk makes to pods and tokens there, and
// returns a client impersonating it: RBAC lets every request through, so
// that what is refused is refused by the policies.
func confinedClient(t *testing.T, admin kubernetes.Interface, kubeconfig, ns, sa string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sluice-vk"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/status"}, Verbs: []string{"get", "patch", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
	}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sluice-vk"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sluice-vk"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding: %v", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	rc.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// boundPod makes a pod already bound to node (no kubelet runs it), running
// as service account sa.
func boundPod(t *testing.T, admin kubernetes.Interface, ns, name, node, sa string, labels map[string]string) *corev1.Pod {
	t.Helper()
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: node, ServiceAccountName: sa, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}},
		},
	}
	got, err := admin.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	// no kubelet confirms a graceful deletion
	grace := int64(0)
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	})
	return got
}
