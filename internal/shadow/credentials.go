package shadow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replicate copies the credentials the tunnels read (S3; with the gateway,
// its host keys only: copies) from Spec.CredentialsNamespace into ns. A
// copy is marked with LabelManagedBy, labelCopy and AnnotationCopyOf; it is
// updated when its original has changed. An object of the same name that is not a copy of that original
// is never overwritten: replicate returns an error wrapping ErrNotOurs and
// records a Warning Event on pod.
func (m *Manager) replicate(ctx context.Context, pod *corev1.Pod, ns string) error {
	if err := m.access(m.Spec.CredentialsNamespace); err != nil {
		return err
	}
	for _, copyOne := range m.copies(ctx, ns) {
		err := copyOne()
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			// Another pod's Ensure made or changed the copy meanwhile.
			err = copyOne()
		}
		if errors.Is(err, ErrNotOurs) {
			m.event(pod, corev1.EventTypeWarning, EventCredentialConflict, "%v", err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copies are the copies replicate makes into ns: the credentials and host
// keys the tunnels log in to the site with or, with the gateway, only the
// gateway's host keys (public): a shadow then holds no site credential.
func (m *Manager) copies(ctx context.Context, ns string) []func() error {
	if m.Spec.gatewayOn() {
		return []func() error{func() error { return m.copyConfigMap(ctx, ns, m.Spec.GatewayHostKeys) }}
	}
	copies := []func() error{
		func() error { return m.copySecret(ctx, ns, m.Spec.loginSecret()) },
		func() error { return m.copyConfigMap(ctx, ns, m.Spec.LoginHostKeys) },
		func() error { return m.copyConfigMap(ctx, ns, m.Spec.NodeHostKeys) },
	}
	if b := m.Spec.Bastion; b.Host != "" {
		copies = append(copies, func() error { return m.copyConfigMap(ctx, ns, b.HostKeys) })
		if b.KeySecret != "" {
			copies = append(copies, func() error { return m.copySecret(ctx, ns, b.KeySecret) })
		}
	}
	return copies
}

func (m *Manager) copyMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   ns,
		Labels:      map[string]string{LabelManagedBy: ManagedBy, labelCopy: "true"},
		Annotations: map[string]string{AnnotationCopyOf: m.Spec.CredentialsNamespace + "/" + name},
	}
}

// isCopy checks that live is the copy of the original want names.
func isCopy(live, want metav1.Object) error {
	if got := live.GetAnnotations()[AnnotationCopyOf]; got != want.GetAnnotations()[AnnotationCopyOf] {
		return fmt.Errorf("shadow: credential %s/%s %w: it is not a copy of %s (%s=%q)",
			live.GetNamespace(), live.GetName(), ErrNotOurs, want.GetAnnotations()[AnnotationCopyOf], AnnotationCopyOf, got)
	}
	return nil
}

func (m *Manager) copySecret(ctx context.Context, ns, name string) error {
	src := m.Spec.CredentialsNamespace + "/" + name
	orig, err := m.Client.CoreV1().Secrets(m.Spec.CredentialsNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("shadow: read credential secret %s: %w", src, err)
	}
	want := &corev1.Secret{ObjectMeta: m.copyMeta(ns, name), Type: orig.Type, Data: orig.Data}
	secrets := m.Client.CoreV1().Secrets(ns)
	live, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("shadow: copy secret %s to %s: %w", src, ns, err)
		}
		m.log().Info("credential copied", "secret", src, "namespace", ns)
		return nil
	case err != nil:
		return fmt.Errorf("shadow: get secret %s/%s: %w", ns, name, err)
	}
	if err := isCopy(live, want); err != nil {
		return err
	}
	if live.Type == want.Type && maps.EqualFunc(live.Data, want.Data, bytes.Equal) {
		return nil
	}
	if live.Type != want.Type || (live.Immutable != nil && *live.Immutable) {
		// Neither can change in place: the copy is made again.
		if err := secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &live.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("shadow: replace secret %s/%s: %w", ns, name, err)
		}
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("shadow: replace secret %s/%s: %w", ns, name, err)
		}
		return nil
	}
	live.Data = want.Data
	if _, err := secrets.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("shadow: update secret %s/%s from %s: %w", ns, name, src, err)
	}
	m.log().Info("credential copy updated", "secret", src, "namespace", ns)
	return nil
}

func (m *Manager) copyConfigMap(ctx context.Context, ns, name string) error {
	src := m.Spec.CredentialsNamespace + "/" + name
	orig, err := m.Client.CoreV1().ConfigMaps(m.Spec.CredentialsNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("shadow: read credential configmap %s: %w", src, err)
	}
	want := &corev1.ConfigMap{ObjectMeta: m.copyMeta(ns, name), Data: orig.Data, BinaryData: orig.BinaryData}
	cms := m.Client.CoreV1().ConfigMaps(ns)
	live, err := cms.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := cms.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("shadow: copy configmap %s to %s: %w", src, ns, err)
		}
		m.log().Info("credential copied", "configmap", src, "namespace", ns)
		return nil
	case err != nil:
		return fmt.Errorf("shadow: get configmap %s/%s: %w", ns, name, err)
	}
	if err := isCopy(live, want); err != nil {
		return err
	}
	if maps.Equal(live.Data, want.Data) && maps.EqualFunc(live.BinaryData, want.BinaryData, bytes.Equal) {
		return nil
	}
	if live.Immutable != nil && *live.Immutable {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &live.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("shadow: replace configmap %s/%s: %w", ns, name, err)
		}
		if _, err := cms.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("shadow: replace configmap %s/%s: %w", ns, name, err)
		}
		return nil
	}
	live.Data, live.BinaryData = want.Data, want.BinaryData
	if _, err := cms.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("shadow: update configmap %s/%s from %s: %w", ns, name, src, err)
	}
	m.log().Info("credential copy updated", "configmap", src, "namespace", ns)
	return nil
}
