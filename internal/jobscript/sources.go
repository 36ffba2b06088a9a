package jobscript

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// sourceCache keeps the objects read for one pod, so that an object used by
// several references is read once. A nil entry is an object found missing.
type sourceCache struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// configMap reads a ConfigMap of the pod's namespace. A missing one gives
// nil when optional, else an error.
func (b *podBuilder) configMap(name string, optional bool, field string) (*corev1.ConfigMap, error) {
	if b.cache.configMaps == nil {
		b.cache.configMaps = map[string]*corev1.ConfigMap{}
	}
	cm, ok := b.cache.configMaps[name]
	if !ok {
		if b.src == nil {
			return nil, fmt.Errorf("%s: no sources to read configmap %s/%s from", field, b.pod.Namespace, name)
		}
		var err error
		cm, err = b.src.ConfigMap(b.ctx, b.pod.Namespace, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: configmap %s/%s: %w", field, b.pod.Namespace, name, err)
		}
		if err != nil {
			cm = nil
		}
		b.cache.configMaps[name] = cm
	}
	if cm == nil && !optional {
		return nil, fmt.Errorf("%s: configmap %s/%s not found", field, b.pod.Namespace, name)
	}
	return cm, nil
}

// secret reads a Secret of the pod's namespace. A missing one gives nil when
// optional, else an error.
func (b *podBuilder) secret(name string, optional bool, field string) (*corev1.Secret, error) {
	if b.cache.secrets == nil {
		b.cache.secrets = map[string]*corev1.Secret{}
	}
	s, ok := b.cache.secrets[name]
	if !ok {
		if b.src == nil {
			return nil, fmt.Errorf("%s: no sources to read secret %s/%s from", field, b.pod.Namespace, name)
		}
		var err error
		s, err = b.src.Secret(b.ctx, b.pod.Namespace, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: secret %s/%s: %w", field, b.pod.Namespace, name, err)
		}
		if err != nil {
			s = nil
		}
		b.cache.secrets[name] = s
	}
	if s == nil && !optional {
		return nil, fmt.Errorf("%s: secret %s/%s not found", field, b.pod.Namespace, name)
	}
	return s, nil
}

// configMapData gives the keys of a ConfigMap, text and binary, as bytes.
func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data
}
