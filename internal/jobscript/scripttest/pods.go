package scripttest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Sources serves ConfigMaps and Secrets from maps, and tokens that name
// what they were asked for.
type Sources struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	Err        error // returned by every call when set
	Reads      int
}

func (s *Sources) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	s.Reads++
	if s.Err != nil {
		return nil, s.Err
	}
	if cm, ok := s.ConfigMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (s *Sources) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	s.Reads++
	if s.Err != nil {
		return nil, s.Err
	}
	if sec, ok := s.Secrets[ns+"/"+name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (s *Sources) ServiceAccountToken(_ context.Context, ns, sa, audience string, exp *int64) (string, error) {
	if s.Err != nil {
		return "", s.Err
	}
	e := "default"
	if exp != nil {
		e = fmt.Sprint(*exp)
	}
	return fmt.Sprintf("token:%s/%s:aud=%s:exp=%s", ns, sa, audience, e), nil
}

// NewSources serves, in namespace ns, the ConfigMaps app-config and
// kube-root-ca.crt and the Secret db-secret.
func NewSources(ns string) *Sources {
	return &Sources{
		ConfigMaps: map[string]*corev1.ConfigMap{
			ns + "/app-config": {Data: map[string]string{
				"mode": "fast", "URL": "http://minio:9000/$(bucket)", "log.level": "debug",
			}, BinaryData: map[string][]byte{"blob.bin": {0, 1, 2}}},
			ns + "/kube-root-ca.crt": {Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}},
		},
		Secrets: map[string]*corev1.Secret{
			ns + "/db-secret": {Data: map[string][]byte{"password": []byte("p@ss'w\"rd $1"), "user": []byte("alice")}},
		},
	}
}

// SimplePod has one container that runs its image's default command.
func SimplePod(image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello", UID: "0a1b2c3d-0000-4000-8000-000000000001"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "hello", Image: image, Args: []string{"--greeting", "hi there"},
		}}},
	}
}
