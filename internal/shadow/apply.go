package shadow

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

type object interface {
	metav1.Object
	runtime.Object
}

// writer is the part of a typed client-go client that apply uses.
type writer[T object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// apply creates want, or, when it exists, updates it unless it already
// carries want's spec hash. An existing object that is not the shadow of
// pod uid is left alone, with an error wrapping ErrNotOurs. merge copies
// want's spec onto live, keeping what the API server or others set that
// the hash does not cover. It returns the object as the API server has it
// and whether it created it.
func apply[T object](ctx context.Context, c writer[T], kind string, want T, uid string, merge func(live, want T)) (T, bool, error) {
	var zero T
	got, err := c.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		return got, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return zero, false, fmt.Errorf("shadow: create %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := c.Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := owned(live, uid); err != nil {
			return err
		}
		if live.GetDeletionTimestamp() != nil {
			return fmt.Errorf("being deleted")
		}
		if live.GetAnnotations()[annotationSpecHash] == want.GetAnnotations()[annotationSpecHash] {
			got = live
			return nil
		}
		live.SetLabels(mergeMaps(live.GetLabels(), want.GetLabels()))
		live.SetAnnotations(mergeMaps(live.GetAnnotations(), want.GetAnnotations()))
		if len(want.GetOwnerReferences()) > 0 {
			live.SetOwnerReferences(want.GetOwnerReferences())
		}
		merge(live, want)
		got, err = c.Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return zero, false, fmt.Errorf("shadow: apply %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
	}
	return got, false, nil
}

// owned checks that o is the shadow object of pod uid.
func owned(o metav1.Object, uid string) error {
	l := o.GetLabels()
	if l[LabelManagedBy] != ManagedBy || l[LabelPodUID] != uid {
		return fmt.Errorf("%w: labels %s=%q, %s=%q", ErrNotOurs, LabelManagedBy, l[LabelManagedBy], LabelPodUID, l[LabelPodUID])
	}
	return nil
}

func mergeMaps(live, want map[string]string) map[string]string {
	out := maps.Clone(live)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

func applyDeployment(ctx context.Context, c kubernetes.Interface, want *appsv1.Deployment, uid string) (*appsv1.Deployment, bool, error) {
	return apply(ctx, c.AppsV1().Deployments(want.Namespace), "deployment", want, uid, func(live, want *appsv1.Deployment) {
		live.Spec = *want.Spec.DeepCopy()
	})
}

func applyService(ctx context.Context, c kubernetes.Interface, want *corev1.Service, uid string) (*corev1.Service, bool, error) {
	return apply(ctx, c.CoreV1().Services(want.Namespace), "service", want, uid, func(live, want *corev1.Service) {
		// The cluster IP and what the API server defaults are kept.
		live.Spec.Type = want.Spec.Type
		live.Spec.Selector = maps.Clone(want.Spec.Selector)
		live.Spec.Ports = append([]corev1.ServicePort(nil), want.Spec.Ports...)
	})
}

func applyConfigMap(ctx context.Context, c kubernetes.Interface, want *corev1.ConfigMap, uid string) (*corev1.ConfigMap, bool, error) {
	return apply(ctx, c.CoreV1().ConfigMaps(want.Namespace), "configmap", want, uid, func(live, want *corev1.ConfigMap) {
		// The node, the job and the socket directory are SetNode's: an
		// update keeps them.
		for _, k := range []string{NodeKey, JobKey, SocketDirKey} {
			if _, ok := live.Data[k]; !ok {
				if live.Data == nil {
					live.Data = map[string]string{}
				}
				live.Data[k] = want.Data[k]
			}
		}
	})
}

// createConfigMap creates want unless it exists.
func createConfigMap(ctx context.Context, c kubernetes.Interface, want *corev1.ConfigMap) error {
	_, err := c.CoreV1().ConfigMaps(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shadow: create configmap %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}
