package hostnode

import (
	"context"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// apiObjects reads ConfigMaps and Secrets from the informers' caches, and
// from the API server when the cache has not seen an object yet (it was
// made just before the pod).
type apiObjects struct {
	client     kubernetes.Interface
	configMaps corev1listers.ConfigMapLister
	secrets    corev1listers.SecretLister
}

var _ objectSource = apiObjects{}

func (o apiObjects) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := o.configMaps.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return cm, err
}

func (o apiObjects) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := o.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return s, err
}

// apiTokens requests service account tokens bound to the pod, and keeps
// each until 80% of its life has passed.
type apiTokens struct {
	client kubernetes.Interface

	mu     sync.Mutex
	tokens map[tokenKey]cachedToken
}

type tokenKey struct {
	uid      types.UID
	audience string
	seconds  int64
}

type cachedToken struct {
	token     []byte
	refreshAt time.Time
}

var _ tokenSource = (*apiTokens)(nil)

// defaultTokenSeconds is a token's life when the projection names none.
const defaultTokenSeconds = 3600

func (t *apiTokens) Token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	seconds := int64(defaultTokenSeconds)
	if p.ExpirationSeconds != nil {
		seconds = *p.ExpirationSeconds
	}
	key := tokenKey{uid: pod.UID, audience: p.Audience, seconds: seconds}
	now := time.Now()
	t.mu.Lock()
	c, ok := t.tokens[key]
	t.mu.Unlock()
	if ok && now.Before(c.refreshAt) {
		return c.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	res, err := t.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	life := res.Status.ExpirationTimestamp.Sub(now)
	c = cachedToken{token: []byte(res.Status.Token), refreshAt: now.Add(life * 8 / 10)}
	t.mu.Lock()
	if t.tokens == nil {
		t.tokens = map[tokenKey]cachedToken{}
	}
	t.tokens[key] = c
	t.mu.Unlock()
	return c.token, nil
}

func (t *apiTokens) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.tokens {
		if k.uid == uid {
			delete(t.tokens, k)
		}
	}
}
