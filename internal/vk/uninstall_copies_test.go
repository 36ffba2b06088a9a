package vk

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/shadow"
	appsv1 "k8s.io/api/apps/v1"
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

// shadowOf is a shadow Deployment of node in ns mounting the Secret key and
// the ConfigMap hosts.
func shadowOf(name, ns, node, key, hosts string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{shadow.LabelManagedBy: shadow.ManagedBy, shadow.LabelNode: node}}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: key}}},
		{Name: "hosts", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: hosts}}}},
	}
	return d
}

// Uninstall deletes every copy of its namespace's credentials in shadow
// namespaces, whatever the name: the bastion's key and a KeySecret renamed
// in config.Network.SSH too, which a list of the chart's names missed.
// It leaves the originals, the copies of another namespace's credentials,
// objects that only look like copies, and copies a shadow of another node
// still mounts; its own node's shadows do not hold a copy back.
func TestUninstallDeletesCopies(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "sluice", "", false)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "a-shadow", "sluice/rel-ssh", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "b-shadow", "sluice/rel-ssh", true)},
		&corev1.ConfigMap{ObjectMeta: copyMeta(t, "rel-login-hosts", "a-shadow", "sluice/rel-login-hosts", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "bastion-key", "a-shadow", "sluice/bastion-key", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "renamed-key", "a-shadow", "sluice/renamed-key", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "c-shadow", "elsewhere/rel-ssh", true)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "d-shadow", "sluice/rel-ssh", false)},
		&corev1.Secret{ObjectMeta: copyMeta(t, "key-file", "tenant", "file:/etc/sluice/ssh/ssh-privatekey", true)},
		// another node's shadow in e-shadow mounts the copies there; this
		// node's in b-shadow does not hold its copies back
		&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "e-shadow", "sluice/rel-ssh", true)},
		&corev1.ConfigMap{ObjectMeta: copyMeta(t, "rel-login-hosts", "e-shadow", "sluice/rel-login-hosts", true)},
		shadowOf("web-abc", "e-shadow", "other-node", "rel-ssh", "rel-login-hosts"),
		shadowOf("web-def", "b-shadow", "hpc", "rel-ssh", "rel-login-hosts"),
	)
	u := Uninstall{Node: "hpc", Namespace: "sluice", Deployment: "sluice", Selector: "x=y",
		DeleteCopies: true, Log: slog.New(slog.DiscardHandler)}
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
		"configmap e-shadow/rel-login-hosts",
		"secret c-shadow/rel-ssh",
		"secret d-shadow/rel-ssh",
		"secret e-shadow/rel-ssh",
		"secret sluice/rel-ssh",
		"secret tenant/key-file",
	}
	if !slices.Equal(left, want) {
		t.Errorf("left %q; want %q", left, want)
	}

	// without DeleteCopies (no copies made), none is touched
	client = fake.NewClientset(&corev1.Secret{ObjectMeta: copyMeta(t, "rel-ssh", "a-shadow", "sluice/rel-ssh", true)})
	u.DeleteCopies = false
	if err := u.Run(context.Background(), client); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := client.CoreV1().Secrets("a-shadow").Get(context.Background(), "rel-ssh", metav1.GetOptions{}); err != nil {
		t.Errorf("copy without DeleteCopies: %v; want it kept", err)
	}
}
