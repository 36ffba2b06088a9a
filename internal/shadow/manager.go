package shadow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Event reasons the Manager records on pods.
const (
	EventShadowCreated      = "ShadowCreated"
	EventCredentialConflict = "ShadowCredentialConflict"
)

// Manager creates, updates and deletes shadows through the API server. Its
// methods may be called concurrently. Client and Spec are required.
type Manager struct {
	Client kubernetes.Interface
	Spec   Spec
	// Log receives what the Manager does not return. If nil, slog.Default().
	Log *slog.Logger
	// Recorder puts Events on the pods. If nil, no Events are recorded.
	Recorder record.EventRecorder
	// HTTP reads the tunnels' /status (TunnelStatus). If nil,
	// http.DefaultClient.
	HTTP *http.Client

	tunnelsMu sync.Mutex
	tunnels   map[types.UID]bool // pods with a shadow (access.go)

	trust trust // the shadow namespaces found trusted (trust.go)
}

// Ref names a pod's shadow, as Ensure left it.
type Ref struct {
	Namespace string
	Name      string
	PodUID    string
	// Forward and Reverse tell which tunnel containers run.
	Forward bool
	Reverse bool
	// Service tells that the shadow has a Service (the pod exposes TCP
	// ports): its ClusterIP is the pod's IP.
	Service bool
}

// ErrNotOurs is wrapped by the errors about an existing object that Ensure
// will not overwrite: an object of a shadow's name that is not that pod's
// shadow, or a credential that is not a copy of the original.
var ErrNotOurs = errors.New("exists and is not sluice's to change")

// Ensure creates pod's shadow, or brings an existing one up to date: the
// shadow namespace when missing (only on a node not confined to a tenant
// namespace; an existing one is used only if sluice created it or is told
// to trust it, else Ensure returns an error wrapping
// ErrNamespaceNotTrusted), the credential copies when
// Spec.ReplicateCredentials, the node ConfigMap (its node is kept), the
// Deployment and the Service. The Deployment owns the ConfigMap and the
// Service, so that deleting it removes them too. In a shadow namespace it may create, it first checks
// that the namespace's Pod Security level admits the shadow pod
// (checkPodSecurity). It returns nil and no error for a pod that gets no
// shadow (Wanted). Errors about the pod wrap *jobscript.PodError or
// *annotations.Refusal; retrying them does not help.
func (m *Manager) Ensure(ctx context.Context, pod *corev1.Pod) (*Ref, error) {
	o, err := m.Spec.Build(pod)
	if err != nil {
		return nil, fmt.Errorf("shadow: build for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if o == nil {
		return nil, nil
	}
	if err := m.access(o.Namespace); err != nil {
		return nil, err
	}
	if m.Spec.TenantNamespace == "" {
		ns, err := m.ensureNamespace(ctx, pod, o.Namespace)
		if err != nil {
			return nil, err
		}
		if err := checkPodSecurity(ns, pod, &o.Deployment.Spec.Template); err != nil {
			return nil, fmt.Errorf("shadow: admission of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if m.Spec.gatewayOn() && (o.Forward || o.Reverse) && (m.Spec.ReplicateCredentials || m.Spec.CredentialsNamespace == o.Namespace) {
		// The shadow reads the gateway's host keys from the credentials
		// namespace: copied from there, or there itself.
		if err := m.gatewayPublished(ctx); err != nil {
			return nil, err
		}
	}
	if m.Spec.ReplicateCredentials && m.Spec.CredentialsNamespace != o.Namespace && (o.Forward || o.Reverse) {
		if err := m.replicate(ctx, pod, o.Namespace); err != nil {
			return nil, err
		}
	}
	if m.Spec.KeyFile != "" && !m.Spec.gatewayOn() && (o.Forward || o.Reverse) {
		if err := m.publishKey(ctx, pod, o.Namespace); err != nil {
			return nil, err
		}
	}
	uid := string(pod.UID)
	// The ConfigMap comes first, so that the shadow pod finds it; it is
	// given its owner once the Deployment exists.
	if err := createConfigMap(ctx, m.Client, o.ConfigMap); err != nil {
		return nil, err
	}
	d, created, err := applyDeployment(ctx, m.Client, o.Deployment, uid)
	if err != nil {
		return nil, err
	}
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID}}
	if o.Service != nil {
		o.Service.OwnerReferences = owner
		if err := stamp(&o.Service.ObjectMeta, o.Service.Spec); err != nil {
			return nil, err
		}
		if _, _, err := applyService(ctx, m.Client, o.Service, uid); err != nil {
			return nil, err
		}
	}
	o.ConfigMap.OwnerReferences = owner
	if err := stamp(&o.ConfigMap.ObjectMeta, nil); err != nil {
		return nil, err
	}
	if _, _, err := applyConfigMap(ctx, m.Client, o.ConfigMap, uid); err != nil {
		return nil, err
	}
	if created {
		m.event(pod, corev1.EventTypeNormal, EventShadowCreated, "created shadow %s/%s", o.Namespace, o.Name)
		m.log().Info("shadow created", "pod", pod.Namespace+"/"+pod.Name, "shadow", o.Namespace+"/"+o.Name)
	}
	return &Ref{Namespace: o.Namespace, Name: o.Name, PodUID: uid, Forward: o.Forward, Reverse: o.Reverse, Service: o.Service != nil}, nil
}

// access is checked before every call to the API server: a Manager needs a
// Client, and on a node confined to a tenant namespace it touches no other
// namespace (ns is metav1.NamespaceAll for a list across namespaces).
func (m *Manager) access(ns string) error {
	if m.Client == nil {
		return errors.New("shadow: the manager has no client")
	}
	if t := m.Spec.TenantNamespace; t != "" && ns != t {
		return fmt.Errorf("shadow: namespace %q: the node is confined to namespace %s", ns, t)
	}
	return nil
}

func (m *Manager) event(pod *corev1.Pod, kind, reason, format string, args ...any) {
	if m.Recorder != nil {
		m.Recorder.Eventf(pod, kind, reason, format, args...)
	}
}

func (m *Manager) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.Default()
}
