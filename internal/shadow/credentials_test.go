package shadow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// originals are the credentials in the virtual kubelet's namespace.
func originals() []runtime.Object {
	return []runtime.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-ssh-key"},
			Type: corev1.SecretTypeSSHAuth, Data: map[string][]byte{"ssh-privatekey": []byte("KEY1")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-known-hosts"},
			Data: map[string]string{"known_hosts": "login ssh-ed25519 AAAA1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sluice-system", Name: "hpc-node-keys"},
			Data: map[string]string{"known_hosts": "node1 ssh-ed25519 BBBB1"}},
	}
}

func replicating() Spec {
	s := testSpec()
	s.ReplicateCredentials = true
	return s
}

func TestReplicate(t *testing.T) {
	ctx := context.Background()
	c := newFake(originals()...)
	m, _ := newManager(t, c, replicating())
	pod := webPod()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	key, err := c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no copy of the key: %v", err)
	}
	if string(key.Data["ssh-privatekey"]) != "KEY1" || key.Type != corev1.SecretTypeSSHAuth ||
		key.Annotations[AnnotationCopyOf] != "sluice-system/hpc-ssh-key" || key.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("key copy: type %s data %q meta %+v", key.Type, key.Data, key.ObjectMeta)
	}
	if _, ok := key.Labels[LabelNode]; ok {
		t.Errorf("a credential copy, shared by the shadows of every node, is labelled with a node")
	}
	for name, want := range map[string]string{"hpc-known-hosts": "AAAA1", "hpc-node-keys": "BBBB1"} {
		cm, err := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, name, metav1.GetOptions{})
		if err != nil || !strings.HasSuffix(cm.Data["known_hosts"], want) || cm.Annotations[AnnotationCopyOf] != "sluice-system/"+name {
			t.Errorf("copy of %s: %v %v", name, err, cm)
		}
	}

	// An unchanged original is not written again.
	c.ClearActions()
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	for _, w := range writes(c.Actions()) {
		if strings.Contains(w, "secrets") || (strings.HasPrefix(w, "update configmaps")) {
			t.Errorf("second Ensure wrote %s", w)
		}
	}

	// A changed original is copied again.
	orig, _ := c.CoreV1().Secrets("sluice-system").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	orig.Data["ssh-privatekey"] = []byte("KEY2")
	if _, err := c.CoreV1().Secrets("sluice-system").Update(ctx, orig, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hosts, _ := c.CoreV1().ConfigMaps("sluice-system").Get(ctx, "hpc-node-keys", metav1.GetOptions{})
	hosts.Data["known_hosts"] = "node1 ssh-ed25519 BBBB2"
	if _, err := c.CoreV1().ConfigMaps("sluice-system").Update(ctx, hosts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure(ctx, pod); err != nil {
		t.Fatalf("Ensure after a change: %v", err)
	}
	key, _ = c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if string(key.Data["ssh-privatekey"]) != "KEY2" {
		t.Errorf("key copy %q after the original changed; want KEY2", key.Data["ssh-privatekey"])
	}
	cm, _ := c.CoreV1().ConfigMaps("science-shadow").Get(ctx, "hpc-node-keys", metav1.GetOptions{})
	if cm.Data["known_hosts"] != "node1 ssh-ed25519 BBBB2" {
		t.Errorf("node keys copy %q after the original changed", cm.Data["known_hosts"])
	}
}

func TestReplicateNeverOverwrites(t *testing.T) {
	tests := []struct {
		name   string
		theirs runtime.Object
	}{
		{"secret not a copy", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "science-shadow", Name: "hpc-ssh-key"},
			Data: map[string][]byte{"ssh-privatekey": []byte("THEIRS")}}},
		{"configmap not a copy", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "science-shadow", Name: "hpc-node-keys"},
			Data: map[string]string{"known_hosts": "THEIRS"}}},
		{"copy of another original", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "science-shadow", Name: "hpc-known-hosts",
			Annotations: map[string]string{AnnotationCopyOf: "other-vk/hpc-known-hosts"}}, Data: map[string]string{"known_hosts": "THEIRS"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := newFake(append(originals(), tt.theirs)...)
			m, rec := newManager(t, c, replicating())
			_, err := m.Ensure(ctx, webPod())
			if !errors.Is(err, ErrNotOurs) {
				t.Fatalf("Ensure = %v; want ErrNotOurs", err)
			}
			ev := events(rec)
			if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ShadowCredentialConflict ") {
				t.Errorf("events %q; want one Warning ShadowCredentialConflict", ev)
			}
			var data string
			switch o := tt.theirs.(type) {
			case *corev1.Secret:
				s, _ := c.CoreV1().Secrets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
				data = string(s.Data["ssh-privatekey"])
			case *corev1.ConfigMap:
				cm, _ := c.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
				data = cm.Data["known_hosts"]
			}
			if data != "THEIRS" {
				t.Errorf("their object now holds %q", data)
			}
			if _, err := c.AppsV1().Deployments("science-shadow").Get(ctx, Name(webPod()), metav1.GetOptions{}); err == nil {
				t.Errorf("the shadow was created without its credentials")
			}
		})
	}
}

func TestReplicateImmutableCopy(t *testing.T) {
	ctx := context.Background()
	yes := true
	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "science-shadow", Name: "hpc-ssh-key",
		Labels:      map[string]string{LabelManagedBy: ManagedBy, labelCopy: "true"},
		Annotations: map[string]string{AnnotationCopyOf: "sluice-system/hpc-ssh-key"}},
		Immutable: &yes, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"ssh-privatekey": []byte("OLD")}}
	c := newFake(append(originals(), old)...)
	m, _ := newManager(t, c, replicating())
	if _, err := m.Ensure(ctx, webPod()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	key, _ := c.CoreV1().Secrets("science-shadow").Get(ctx, "hpc-ssh-key", metav1.GetOptions{})
	if string(key.Data["ssh-privatekey"]) != "KEY1" || key.Type != corev1.SecretTypeSSHAuth {
		t.Errorf("copy %s %q; want it made again from the original", key.Type, key.Data["ssh-privatekey"])
	}
}

func TestReplicateMissingOriginal(t *testing.T) {
	c := newFake()
	m, _ := newManager(t, c, replicating())
	_, err := m.Ensure(context.Background(), webPod())
	if err == nil || !strings.Contains(err.Error(), "sluice-system/hpc-ssh-key") {
		t.Errorf("Ensure = %v; want an error naming the missing original", err)
	}
}

// TestEnsureConcurrent runs the Ensures of several pods of one namespace at
// once: they race to create the namespace and the credential copies.
func TestEnsureConcurrent(t *testing.T) {
	ctx := context.Background()
	c := newFake(originals()...)
	m, _ := newManager(t, c, replicating())
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		pod := testPod("science", "web", withUID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)), withPorts("80"))
		go func() {
			_, err := m.Ensure(ctx, pod)
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("Ensure: %v", err)
		}
	}
	deps, _ := c.AppsV1().Deployments("science-shadow").List(ctx, metav1.ListOptions{})
	if len(deps.Items) != n {
		t.Errorf("%d deployments; want %d", len(deps.Items), n)
	}
}
