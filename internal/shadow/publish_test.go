package shadow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// publishing is a Spec of a node confined to hpc-tenant whose key Secret
// is published from keyFile.
func publishing(keyFile string) Spec {
	s := testSpec()
	s.TenantNamespace, s.CredentialsNamespace, s.KeyFile = "hpc-tenant", "hpc-tenant", keyFile
	return s
}

func writeKey(t *testing.T, file, key string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPublishKey: on a confined node the key Secret is written in the
// tenant namespace from the key file, owned by the chart's known_hosts
// ConfigMap there, written again when the file changes, and nothing is
// read or written outside the tenant namespace.
func TestPublishKey(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "ssh-privatekey")
	writeKey(t, file, "KEY1")
	c := newFake(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-known-hosts", UID: "cm-uid"}})
	m, _ := newManager(t, c, publishing(file))
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	key, err := c.CoreV1().Secrets("hpc-tenant").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no key Secret in the tenant namespace: %v", err)
	}
	if got := string(key.Data["ssh-privatekey"]); got != "KEY1" {
		t.Errorf("ssh-privatekey %q; want KEY1", got)
	}
	if o := key.OwnerReferences; len(o) != 1 || o[0].Kind != "ConfigMap" || o[0].Name != "hpc-known-hosts" || o[0].UID != "cm-uid" {
		t.Errorf("owners %+v; want the ConfigMap hpc-known-hosts", o)
	}
	if key.Annotations[AnnotationCopyOf] != "file:"+file || key.Labels[labelCopy] != "true" {
		t.Errorf("meta %+v; want marked as a copy of the file", key.ObjectMeta)
	}

	// unchanged: not written again; rotated: updated
	c.ClearActions()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes(c.Actions()) {
		if strings.Contains(w, "secrets") {
			t.Errorf("second Ensure wrote %s", w)
		}
	}
	writeKey(t, file, "KEY2")
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatal(err)
	}
	key, _ = c.CoreV1().Secrets("hpc-tenant").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if got := string(key.Data["ssh-privatekey"]); got != "KEY2" {
		t.Errorf("after the key file changed: %q; want KEY2", got)
	}
	for _, a := range c.Actions() {
		if ns := a.GetNamespace(); ns != "hpc-tenant" {
			t.Errorf("%s %s in namespace %q; want hpc-tenant only", a.GetVerb(), a.GetResource().Resource, ns)
		}
	}
}

// TestPublishKeyNotOurs: a Secret of that name that sluice did not publish
// is left as it is, and the shadow is not made.
func TestPublishKeyNotOurs(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "ssh-privatekey")
	writeKey(t, file, "KEY1")
	c := newFake(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-known-hosts"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-ssh-key"}, Data: map[string][]byte{"ssh-privatekey": []byte("THEIRS")}},
	)
	m, rec := newManager(t, c, publishing(file))
	if _, err := m.Ensure(ctx, webPod()); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Ensure = %v; want ErrNotOurs", err)
	}
	key, _ := c.CoreV1().Secrets("hpc-tenant").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if string(key.Data["ssh-privatekey"]) != "THEIRS" {
		t.Errorf("the operator's Secret was overwritten")
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, EventCredentialConflict) {
			t.Errorf("event %q; want %s", ev, EventCredentialConflict)
		}
	default:
		t.Errorf("no Warning Event")
	}
}

// TestPublishKeyFile: a missing or oversized key file fails the shadow,
// naming the file.
func TestPublishKeyFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	writeKey(t, big, strings.Repeat("k", maxKeyFile+1))
	for _, file := range []string{filepath.Join(dir, "missing"), big} {
		c := newFake(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hpc-tenant", Name: "hpc-known-hosts"}})
		m, _ := newManager(t, c, publishing(file))
		if _, err := m.Ensure(context.Background(), webPod()); err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("Ensure with key file %s: %v; want an error naming it", file, err)
		}
	}
}
