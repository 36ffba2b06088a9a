package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PlacementWatcher follows the node ConfigMaps sluice-vk writes for the
// shadows of one virtual node and reports each change of a job's
// placement (a requeue, another node) or a ConfigMap gone to OnChange:
// the gateway runs apart from sluice-vk, so it learns a job moved from
// sluice-vk's records, not from a call.
//
// Its client needs list and watch of configmaps in the namespaces where
// shadows live: every namespace, or the tenant namespace of a node
// confined to one.
type PlacementWatcher struct {
	// Client watches the ConfigMaps. Required.
	Client kubernetes.Interface
	// Scope says whose shadows: its Node and TenantNamespace. Required.
	Scope ShadowScope
	// OnChange is given a node ConfigMap whose placement changed, and the
	// new one (nil when the ConfigMap is gone): Server.PlacementChanged.
	// Required.
	OnChange func(record types.NamespacedName, to *Placement)
}

// Run watches until ctx ends. It returns an error only when w is not
// usable; the API server unreachable is retried (and logged by client-go).
func (w *PlacementWatcher) Run(ctx context.Context) error {
	if w.Client == nil || w.OnChange == nil {
		return errors.New("gateway: placement watcher: a client and OnChange are required")
	}
	if err := w.Scope.validate(); err != nil {
		return fmt.Errorf("gateway: placement watcher: %w", err)
	}
	sel := labels.Set{shadow.LabelManagedBy: shadow.ManagedBy, shadow.LabelNode: w.Scope.Node}.String()
	ns := w.Scope.TenantNamespace
	if ns == "" {
		ns = metav1.NamespaceAll
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.Client, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	inf := factory.Core().V1().ConfigMaps().Informer()
	// Only the node ConfigMap's placement is kept: a shadow's other
	// ConfigMaps share its labels.
	if err := inf.SetTransform(keepPlacement); err != nil {
		return fmt.Errorf("gateway: placement watcher: %w", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.ConfigMap)
			cur, ok2 := newObj.(*corev1.ConfigMap)
			if !ok1 || !ok2 || !isNodeConfigMap(cur) {
				return
			}
			if to := placementOf(cur); to != placementOf(old) {
				w.OnChange(types.NamespacedName{Namespace: cur.Namespace, Name: cur.Name}, &to)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok && isNodeConfigMap(cm) {
				w.OnChange(types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}, nil)
			}
		},
	}); err != nil {
		return fmt.Errorf("gateway: placement watcher: %w", err)
	}
	inf.Run(ctx.Done())
	return nil
}

// isNodeConfigMap tells a shadow's node ConfigMap from its others.
func isNodeConfigMap(cm *corev1.ConfigMap) bool {
	name := cm.Labels[shadow.LabelShadow]
	return name != "" && cm.Name == shadow.NodeConfigMap(name)
}

// placementOf is the placement cm records.
func placementOf(cm *corev1.ConfigMap) Placement {
	return Placement{Node: cm.Data[shadow.NodeKey], Job: cm.Data[shadow.JobKey], SocketDir: cm.Data[shadow.SocketDirKey]}
}

// keepPlacement strips a ConfigMap the watcher caches down to what it
// reads: its name, labels and placement.
func keepPlacement(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	p := placementOf(cm)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID,
			ResourceVersion: cm.ResourceVersion, Labels: cm.Labels},
		Data: map[string]string{shadow.NodeKey: p.Node, shadow.JobKey: p.Job, shadow.SocketDirKey: p.SocketDir},
	}, nil
}
