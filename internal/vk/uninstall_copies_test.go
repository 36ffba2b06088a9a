package vk

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
)

// copyMeta is a credential copy in ns of the original of, as sluice-vk's
// shadow manager marks it (or, with marked false, an object of the same
// name and annotation that is not marked as a copy).
func copyMeta(t *testing.T, name, ns, of string, marked bool) metav1.ObjectMeta {
	t.Helper()
	m := metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{shadow.AnnotationCopyOf: of}}
	if marked {
		set, err := labels.ConvertSelectorToLabelsMap(shadow.CopySelector)
		if err != nil {
			t.Fatal(err)
		}
		m.Labels = set
	}
	return m
}

// Uninstall deletes the copies of its release's credentials in every shadow
// namespace, and nothing else: not the originals, not the copies of another
// release's (or another namespace's) credentials, not an object that only
// looks like a copy.
func TestUninstallDeletesCopies(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "sluice", "", false)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "a-shadow", "sluice/rel-ssh", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "b-shadow", "sluice/rel-ssh", true)},
		&corev1.ConfigMap{ObjectMeta: copyMeta(t, "rel-login-hosts", "a-shadow", "sluice/rel-login-hosts", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "other-ssh", "a-shadow", "sluice/other-ssh", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "c-shadow", "elsewhere/rel-ssh", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "d-shadow", "sluice/rel-ssh", false)},
		&corev1.ConfigMap{ObjectMeta: copyMeta(t, "rel-login-hosts", "b-shadow", "sluice/rel-login-hostsx", true)},
	)
	u := Uninstall{Node: "hpc", Namespace: "sluice", Deployment: "sluice", Selector: "x=y",
		CopiesOf: []string{"rel-ssh", "rel-login-hosts"}, Log: slog.New(slog.DiscardHandler)}
	if err := u.Run(context.Background(), client); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var left []string
	secrets, _ := client.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{})
	for _, s := range secrets.Items {
		left = append(left, "secret "+s.Namespace+"/"+s.Name)
	}
	maps, _ := client.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{})
	for _, c := range maps.Items {
		left = append(left, "configmap "+c.Namespace+"/"+c.Name)
	}
	slices.Sort(left)
	want := []string{
		"configmap b-shadow/rel-login-hosts",
		"secret a-shadow/other-ssh",
		"secret c-shadow/rel-ssh",
		"secret d-shadow/rel-ssh",
		"secret sluice/rel-ssh",
	}
	if !slices.Equal(left, want) {
		t.Errorf("left %q; want %q", left, want)
	}
}
