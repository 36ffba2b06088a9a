package shadow

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// trustFake is a Manager copying the credentials, on a fake API server
// holding their originals and objs; with what Ensure wrote since the last
// call, and a namespace by name (nil when missing).
func trustFake(objs ...runtime.Object) (*Manager, func() []string, func(string) *corev1.Namespace) {
	c := newFake(append(originals(), objs...)...)
	m := &Manager{Client: c, Spec: replicating()}
	written := func() []string {
		defer c.ClearActions()
		return writes(c.Actions())
	}
	get := func(name string) *corev1.Namespace {
		ns, err := c.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return ns
	}
	return m, written, get
}

// tenantMade is a namespace someone else made, with sluice's labels forged.
func tenantMade(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "made-by-a-tenant",
		Labels: map[string]string{LabelManagedBy: ManagedBy, "pod-security.kubernetes.io/enforce": "restricted"}}}
}

// wantNotTrusted checks that err refuses the namespace ns, naming it and
// both ways out, and that nothing was written.
func wantNotTrusted(t *testing.T, err error, ns string, written []string) {
	t.Helper()
	if !errors.Is(err, ErrNamespaceNotTrusted) {
		t.Fatalf("Ensure = %v; want an error wrapping ErrNamespaceNotTrusted", err)
	}
	for _, w := range []string{"namespace " + ns + " not trusted", "delete namespace " + ns, "Network.TrustedShadowNamespaces"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q; want it to contain %q", err, w)
		}
	}
	for _, w := range written {
		t.Errorf("Ensure wrote %s into a namespace it does not trust", w)
	}
}

// A <namespace>-shadow that someone else made before the pod's first
// shadow (a tenant allowed to create namespaces), even with sluice's
// labels, gets nothing: no copy of the site's key, no shadow; Ensure says
// why and what to do.
func TestEnsureRefusesNamespaceItDidNotCreate(t *testing.T) {
	m, written, _ := trustFake(tenantMade("science-shadow"))
	_, err := m.Ensure(context.Background(), webPod())
	wantNotTrusted(t, err, "science-shadow", written())
}

// A shadow namespace Ensure creates is recorded, name and UID, in
// sluice's namespace: a restarted sluice-vk (a new Manager) uses it; once
// deleted and made again by someone else under the same name, it is
// refused; deleted and left alone, sluice makes it again and records the
// new one.
func TestEnsureRecordsNamespace(t *testing.T) {
	ctx := context.Background()
	m, written, get := trustFake()
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	written()
	ns := get("science-shadow")
	rec, err := m.Client.CoreV1().ConfigMaps("sluice-system").Get(ctx, RecordName("science-shadow"), metav1.GetOptions{})
	if err != nil || rec.Data["namespace"] != "science-shadow" || rec.Data["uid"] != string(ns.UID) || rec.Labels[LabelShadowNamespace] != "science-shadow" {
		t.Fatalf("record: %v %v; want namespace science-shadow, uid %s", rec, err, ns.UID)
	}

	restarted := &Manager{Client: m.Client, Spec: m.Spec}
	if _, err := restarted.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure after a restart: %v", err)
	}
	written()

	// The tenant deletes it and makes their own of the same name.
	if err := m.Client.CoreV1().Namespaces().Delete(ctx, "science-shadow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Client.CoreV1().Namespaces().Create(ctx, tenantMade("science-shadow"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	written()
	for name, mgr := range map[string]*Manager{"running": m, "restarted": &Manager{Client: m.Client, Spec: m.Spec}} {
		_, err := mgr.Ensure(ctx, webPod())
		wantNotTrusted(t, err, "science-shadow", written())
		if !strings.Contains(err.Error(), "deleted and made again") {
			t.Errorf("%s: error %q; want it to say the namespace was made again", name, err)
		}
	}

	// Gone: sluice makes it again, and trusts the new one only.
	if err := m.Client.CoreV1().Namespaces().Delete(ctx, "science-shadow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure once the namespace is gone: %v", err)
	}
	again := get("science-shadow")
	rec, _ = m.Client.CoreV1().ConfigMaps("sluice-system").Get(ctx, RecordName("science-shadow"), metav1.GetOptions{})
	if again == nil || again.UID == ns.UID || rec.Data["uid"] != string(again.UID) {
		t.Errorf("namespace made again %v, record %v; want the record to hold its new uid", again, rec.Data)
	}
}

// A namespace the operator trusts (Network.TrustedShadowNamespaces) is
// used as it is, unrecorded.
func TestEnsureTrustedNamespace(t *testing.T) {
	ctx := context.Background()
	m, written, _ := trustFake(tenantMade("science-shadow"))
	m.Spec.TrustedNamespaces = []string{"other-shadow", "science-shadow"}
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if _, err := m.Client.CoreV1().Secrets("science-shadow").Get(ctx, m.Spec.KeySecret, metav1.GetOptions{}); err != nil {
		t.Errorf("key copy: %v; want it in the trusted namespace", err)
	}
	for _, w := range written() {
		if strings.HasSuffix(w, " sluice-system") {
			t.Errorf("Ensure wrote %s: a trusted namespace needs no record", w)
		}
	}
}

// An install from before the records adopts a shadow namespace it made:
// sluice's label and a copy of the site's key equal to the original, which
// only who had the key could put there. Forged labels with a copy that is
// not the key, or no copy, are not enough; nor is a copy without
// ReplicateCredentials (nothing is compared then).
func TestEnsureAdoptsNamespaceOfOlderInstall(t *testing.T) {
	ctx := context.Background()
	s := replicating()
	copyOf := func(data string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.KeySecret, Namespace: "science-shadow",
			Labels:      map[string]string{LabelManagedBy: ManagedBy, labelCopy: "true"},
			Annotations: map[string]string{AnnotationCopyOf: "sluice-system/" + s.KeySecret}},
			Data: map[string][]byte{keyPrivate: []byte(data)}}
	}
	unlabelled := tenantMade("science-shadow")
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name      string
		objs      []runtime.Object
		replicate bool
		adopt     bool
	}{
		{"sluice's copy of the key", []runtime.Object{tenantMade("science-shadow"), copyOf("KEY1")}, true, true},
		{"a copy of another key", []runtime.Object{tenantMade("science-shadow"), copyOf("a tenant's key")}, true, false},
		{"no copy", []runtime.Object{tenantMade("science-shadow")}, true, false},
		{"no sluice label", []runtime.Object{unlabelled, copyOf("KEY1")}, true, false},
		{"no ReplicateCredentials", []runtime.Object{tenantMade("science-shadow"), copyOf("KEY1")}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, written, _ := trustFake(tc.objs...)
			m.Spec.ReplicateCredentials = tc.replicate
			_, err := m.Ensure(ctx, webPod())
			if !tc.adopt {
				wantNotTrusted(t, err, "science-shadow", written())
				return
			}
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			rec, err := m.Client.CoreV1().ConfigMaps("sluice-system").Get(ctx, RecordName("science-shadow"), metav1.GetOptions{})
			if err != nil || rec.Data["uid"] != "made-by-a-tenant" {
				t.Errorf("record %v, %v; want the adopted namespace's uid", rec, err)
			}
		})
	}
}

// A namespace Ensure created and could not record (no right in sluice's
// namespace, for a while) is its own: recorded at the next attempt, not
// refused as made by someone else.
func TestEnsureRecordsLater(t *testing.T) {
	ctx := context.Background()
	m, _, get := trustFake()
	c := m.Client.(*fake.Clientset)
	var denied atomic.Bool
	denied.Store(true)
	c.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "sluice-system" && denied.Load() {
			return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), RecordName("science-shadow"), errors.New("no right"))
		}
		return false, nil, nil
	})
	_, err := m.Ensure(ctx, webPod())
	if err == nil || errors.Is(err, ErrNamespaceNotTrusted) || !strings.Contains(err.Error(), "record namespace science-shadow") {
		t.Fatalf("Ensure = %v; want the record's error", err)
	}
	if _, err := c.CoreV1().Secrets("science-shadow").Get(ctx, m.Spec.KeySecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("key copy in the unrecorded namespace: %v; want none", err)
	}
	denied.Store(false)
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure once the record can be written: %v", err)
	}
	rec, err := c.CoreV1().ConfigMaps("sluice-system").Get(ctx, RecordName("science-shadow"), metav1.GetOptions{})
	if ns := get("science-shadow"); err != nil || ns == nil || rec.Data["uid"] != string(ns.UID) {
		t.Errorf("record %v, %v; want the uid of the namespace made", rec, err)
	}
}

// A pod asking for its shadow in its own namespace (shadow-same-ns, no
// credential copied) has it there: that namespace is the pod's, not a
// shadow namespace someone may have made first; it is not recorded.
func TestEnsureSameNamespaceIsThePods(t *testing.T) {
	ctx := context.Background()
	m, written, _ := trustFake(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "science", UID: "the-pods"}})
	m.Spec.ReplicateCredentials = false
	pod := testPod("science", "web", withPorts("8080"), withAnnotation(annotations.ShadowSameNS, "true"))
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	for _, w := range written() {
		if strings.HasSuffix(w, " sluice-system") || strings.HasPrefix(w, "create namespaces") {
			t.Errorf("Ensure wrote %s for a shadow in the pod's own namespace", w)
		}
	}
}
