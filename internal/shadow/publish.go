package shadow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxKeyFile bounds what publishKey reads of a key or certificate file.
const maxKeyFile = 64 << 10

// Keys of the key Secret the shadows mount.
const (
	secretKeyPrivate     = "ssh-privatekey"
	secretKeyCertificate = "ssh-certificate"
)

// publishKey writes KeySecret in ns, the tenant namespace, from the key
// (and certificate) files the virtual kubelet itself reads: a node confined
// to a tenant namespace gets its key from a Secret of its own namespace
// (mounted by the kubelet), and needs no right outside the tenant namespace
// to give it to the shadows. The Secret is owned by the ConfigMap
// LoginHostKeys of ns (the chart's), so that it goes when that goes; it is
// marked as a copy of the file, and a Secret of that name that is not such a
// copy is never overwritten (ErrNotOurs, with a Warning Event on pod). It is
// updated when the files have changed (a rotated key).
func (m *Manager) publishKey(ctx context.Context, pod *corev1.Pod, ns string) error {
	if err := m.access(ns); err != nil {
		return err
	}
	want, err := m.keySecretFromFiles(ctx, ns)
	if err != nil {
		return err
	}
	secrets := m.Client.CoreV1().Secrets(ns)
	live, err := secrets.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("shadow: publish secret %s/%s: %w", ns, want.Name, err)
		}
		m.log().Info("key secret published", "secret", ns+"/"+want.Name, "from", m.Spec.KeyFile)
		return nil
	case err != nil:
		return fmt.Errorf("shadow: get secret %s/%s: %w", ns, want.Name, err)
	}
	if err := isCopy(live, want); err != nil {
		m.event(pod, corev1.EventTypeWarning, EventCredentialConflict, "%v", err)
		return err
	}
	if maps.EqualFunc(live.Data, want.Data, bytes.Equal) {
		return nil
	}
	live.Data = want.Data
	if _, err := secrets.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("shadow: update secret %s/%s from %s: %w", ns, want.Name, m.Spec.KeyFile, err)
	}
	m.log().Info("key secret updated", "secret", ns+"/"+want.Name, "from", m.Spec.KeyFile)
	return nil
}

// keySecretFromFiles is the Secret publishKey wants in ns.
func (m *Manager) keySecretFromFiles(ctx context.Context, ns string) (*corev1.Secret, error) {
	data := map[string][]byte{}
	files := map[string]string{secretKeyPrivate: m.Spec.KeyFile}
	if m.Spec.KeySecretCertificate && m.Spec.CertificateFile != "" {
		files[secretKeyCertificate] = m.Spec.CertificateFile
	}
	for key, file := range files {
		b, err := readSmall(file)
		if err != nil {
			return nil, fmt.Errorf("shadow: publish secret %s/%s: %w", ns, m.Spec.KeySecret, err)
		}
		data[key] = b
	}
	owner, err := m.Client.CoreV1().ConfigMaps(ns).Get(ctx, m.Spec.LoginHostKeys, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("shadow: publish secret %s/%s: its owner, configmap %s: %w", ns, m.Spec.KeySecret, m.Spec.LoginHostKeys, err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Spec.KeySecret, Namespace: ns,
			Labels:      map[string]string{LabelManagedBy: ManagedBy, labelCopy: "true"},
			Annotations: map[string]string{AnnotationCopyOf: "file:" + m.Spec.KeyFile},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}, nil
}

// readSmall reads a file of at most maxKeyFile bytes.
func readSmall(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("read %s: larger than %d bytes", name, maxKeyFile)
	}
	return b, nil
}
