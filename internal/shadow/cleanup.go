package shadow

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
)

// deleter is the part of a typed client-go client that Delete uses.
type deleter interface {
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// foreground deletes in the foreground, only the object of that uid when
// uid is not empty.
func foreground(uid types.UID) metav1.DeleteOptions {
	p := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{PropagationPolicy: &p}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return opts
}

// Delete deletes pod's shadow: its Deployment (and with it its pods),
// Service and node ConfigMap, in the foreground. What is already gone is
// fine. Credential copies and the namespace stay: other shadows use them.
func (m *Manager) Delete(ctx context.Context, pod *corev1.Pod) error {
	ns, name := m.where(pod)
	if err := m.access(ns); err != nil {
		return err
	}
	m.forgetTunnels(pod)
	var errs []error
	for _, o := range []struct {
		kind string
		name string
		c    deleter
	}{
		{"deployment", name, m.Client.AppsV1().Deployments(ns)},
		{"service", name, m.Client.CoreV1().Services(ns)},
		{"configmap", NodeConfigMap(name), m.Client.CoreV1().ConfigMaps(ns)},
	} {
		if err := o.c.Delete(ctx, o.name, foreground("")); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("shadow: delete %s %s/%s: %w", o.kind, ns, o.name, err))
		}
	}
	return errors.Join(errs...)
}

// CleanOrphans deletes the shadow objects of this virtual node whose pod is
// gone: the Deployments, Services and ConfigMaps labelled with Spec.NodeName
// whose pod UID live does not know. It looks in every namespace, or in the
// tenant namespace only on a confined node. It returns how many objects it
// deleted; it goes on past a failed deletion and reports them all.
func (m *Manager) CleanOrphans(ctx context.Context, live func(uid string) bool) (int, error) {
	ns := metav1.NamespaceAll
	if m.Spec.TenantNamespace != "" {
		ns = m.Spec.TenantNamespace
	}
	if err := m.access(ns); err != nil {
		return 0, err
	}
	sel, err := m.selector()
	if err != nil {
		return 0, err
	}
	opts := metav1.ListOptions{LabelSelector: sel}
	var objs []shadowObject
	deps, err := m.Client.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("shadow: list deployments: %w", err)
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		objs = append(objs, shadowObject{"deployment", d, m.Client.AppsV1().Deployments(d.Namespace)})
	}
	svcs, err := m.Client.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("shadow: list services: %w", err)
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		objs = append(objs, shadowObject{"service", s, m.Client.CoreV1().Services(s.Namespace)})
	}
	cms, err := m.Client.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("shadow: list configmaps: %w", err)
	}
	for i := range cms.Items {
		c := &cms.Items[i]
		objs = append(objs, shadowObject{"configmap", c, m.Client.CoreV1().ConfigMaps(c.Namespace)})
	}

	deleted := 0
	var errs []error
	for _, o := range objs {
		uid := o.obj.GetLabels()[LabelPodUID]
		if live(uid) {
			continue
		}
		id := o.obj.GetNamespace() + "/" + o.obj.GetName()
		switch err := o.del.Delete(ctx, o.obj.GetName(), foreground(o.obj.GetUID())); {
		case err == nil:
			deleted++
			m.log().Info("orphan shadow object deleted", "kind", o.kind, "object", id, "podUID", uid)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, with its owner, or replaced meanwhile.
		default:
			errs = append(errs, fmt.Errorf("shadow: delete orphan %s %s: %w", o.kind, id, err))
		}
	}
	return deleted, errors.Join(errs...)
}

// shadowObject is an object CleanOrphans found, and the client deleting it.
type shadowObject struct {
	kind string
	obj  metav1.Object
	del  deleter
}

// selector selects the shadow objects of this virtual node.
func (m *Manager) selector() (string, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelNode: m.Spec.NodeName}.AsSelector()
	has, err := labels.NewRequirement(LabelPodUID, selection.Exists, nil)
	if err != nil {
		return "", fmt.Errorf("shadow: selector: %w", err)
	}
	return sel.Add(*has).String(), nil
}
