package vk

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/shadow"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// deleteCopies deletes the credential copies sluice-vk made in shadow
// namespaces (ReplicateCredentials) of the originals named in u.CopiesOf,
// in u.Namespace: the site's key and host keys would otherwise outlive the
// release there. A copy of another original, or an object not marked as a
// copy, is left alone.
func (u Uninstall) deleteCopies(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	if len(u.CopiesOf) == 0 {
		return nil
	}
	ours := func(m metav1.ObjectMeta) bool {
		name, ok := strings.CutPrefix(m.Annotations[shadow.AnnotationCopyOf], u.Namespace+"/")
		return ok && m.Namespace != u.Namespace && slices.Contains(u.CopiesOf, name)
	}
	sel := metav1.ListOptions{LabelSelector: shadow.CopySelector}
	secrets, err := client.CoreV1().Secrets("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("uninstall: list credential copies: %w", err)
	}
	for _, s := range secrets.Items {
		if !ours(s.ObjectMeta) {
			continue
		}
		if err := client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("uninstall: delete credential copy secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		log.Info("sluice-vk uninstall: credential copy deleted", "secret", s.Namespace+"/"+s.Name)
	}
	maps, err := client.CoreV1().ConfigMaps("").List(ctx, sel)
	if err != nil {
		return fmt.Errorf("uninstall: list credential copies: %w", err)
	}
	for _, c := range maps.Items {
		if !ours(c.ObjectMeta) {
			continue
		}
		if err := client.CoreV1().ConfigMaps(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("uninstall: delete credential copy configmap %s/%s: %w", c.Namespace, c.Name, err)
		}
		log.Info("sluice-vk uninstall: credential copy deleted", "configmap", c.Namespace+"/"+c.Name)
	}
	return nil
}
