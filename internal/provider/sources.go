package provider

import (
	"context"
	"fmt"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// sources gives jobscript.FromPod what one pod refers to, read from the API
// server: ConfigMaps, Secrets, and service account tokens bound to the pod
// through the TokenRequest API, as the kubelet requests them.
type sources struct {
	client kubernetes.Interface
	pod    *corev1.Pod
}

var _ jobscript.Sources = sources{}

func (s sources) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s sources) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s sources) ServiceAccountToken(ctx context.Context, namespace, serviceAccount, audience string, expirationSeconds *int64) (string, error) {
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: expirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: "Pod", APIVersion: "v1", Name: s.pod.Name, UID: s.pod.UID,
			},
		},
	}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := s.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", namespace, serviceAccount, err)
	}
	return tr.Status.Token, nil
}
