package vk

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/shadow"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// deleteCopies deletes the credential copies sluice-vk made in shadow
// namespaces (ReplicateCredentials): every object marked as a copy
// (shadow.CopySelector) of an original in u.Namespace, whatever its name,
// so that none is missed (the bastion's key, names set in
// config.Network.SSH): the site's key and host keys would otherwise outlive
// the release there. A copy of another namespace's original, or an object
// not marked as a copy, is left alone; so is a copy that a shadow of
// another virtual node still mounts (nodes installed in one namespace share
// the copies of credentials of the same name).
func (u Uninstall) deleteCopies(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	if !u.DeleteCopies {
		return nil
	}
	sel := metav1.ListOptions{LabelSelector: shadow.CopySelector}
	secrets, err := client.CoreV1().Secrets("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("uninstall: list credential copies: %w", err)
	}
	maps, err := client.CoreV1().ConfigMaps("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("uninstall: list credential copies: %w", err)
	}
	var copies []credentialCopy
	for _, s := range secrets.Items {
		copies = append(copies, credentialCopy{"secret", s.ObjectMeta, secretMounted(s.Name)})
	}
	for _, c := range maps.Items {
		copies = append(copies, credentialCopy{"configmap", c.ObjectMeta, configMapMounted(c.Name)})
	}
	inUse := u.mountedElsewhere(ctx, client)
	for _, c := range copies {
		if !strings.HasPrefix(c.meta.Annotations[shadow.AnnotationCopyOf], u.Namespace+"/") || c.meta.Namespace == u.Namespace {
			continue // a copy of another namespace's credential, or an original
		}
		id := c.meta.Namespace + "/" + c.meta.Name
		by, err := inUse(c.meta.Namespace, c.mounts)
		switch {
		case err != nil:
			return err
		case by != "":
			log.Info("sluice-vk uninstall: credential copy kept, another node's shadow mounts it", c.kind, id, "shadow", by)
			continue
		}
		if err := u.deleteCopy(ctx, client, c); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("uninstall: delete credential copy %s %s: %w", c.kind, id, err)
		}
		log.Info("sluice-vk uninstall: credential copy deleted", c.kind, id)
	}
	return nil
}

// credentialCopy is an object marked as a credential copy, with what tells
// a volume mounting it.
type credentialCopy struct {
	kind   string // "secret" or "configmap"
	meta   metav1.ObjectMeta
	mounts func(corev1.Volume) bool
}

// deleteCopy deletes c. The calls are written out, not passed as method
// values, so that the chart's RBAC test (test/chart) can follow them.
func (u Uninstall) deleteCopy(ctx context.Context, client kubernetes.Interface, c credentialCopy) error {
	if c.kind == "secret" {
		return client.CoreV1().Secrets(c.meta.Namespace).Delete(ctx, c.meta.Name, metav1.DeleteOptions{})
	}
	return client.CoreV1().ConfigMaps(c.meta.Namespace).Delete(ctx, c.meta.Name, metav1.DeleteOptions{})
}

// mountedElsewhere returns a function telling which shadow Deployment of
// another virtual node (not being deleted) in namespace ns has a volume
// that mounts, "" when none does. The shadows of each namespace are listed
// once.
func (u Uninstall) mountedElsewhere(ctx context.Context, client kubernetes.Interface) func(ns string, mounts func(corev1.Volume) bool) (string, error) {
	shadows := map[string][]appsv1.Deployment{}
	sel := labels.Set{shadow.LabelManagedBy: shadow.ManagedBy}.String()
	return func(ns string, mounts func(corev1.Volume) bool) (string, error) {
		deps, ok := shadows[ns]
		if !ok {
			l, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return "", fmt.Errorf("uninstall: list the shadows of namespace %s: %w", ns, err)
			}
			deps = l.Items
			shadows[ns] = deps
		}
		for _, d := range deps {
			if d.Labels[shadow.LabelNode] == u.Node || d.DeletionTimestamp != nil {
				continue
			}
			if slices.ContainsFunc(d.Spec.Template.Spec.Volumes, mounts) {
				return ns + "/" + d.Name, nil
			}
		}
		return "", nil
	}
}

func secretMounted(name string) func(corev1.Volume) bool {
	return func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == name }
}

func configMapMounted(name string) func(corev1.Volume) bool {
	return func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == name }
}
