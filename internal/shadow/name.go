package shadow

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

const (
	// maxName is the longest shadow name: a DNS label, and a Service name
	// (RFC 1035: it starts with a letter).
	maxName = 63
	// hashLen characters of base32 (50 bits) tell apart the pods whose
	// names share a prefix.
	hashLen = 10
	// ShadowSuffix makes the namespace of a pod's shadow when the node is
	// not confined to a tenant namespace.
	ShadowSuffix = "-shadow"
)

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Name is the name of pod's shadow Deployment and Service (the ConfigMap is
// Name + "-node"): a DNS label of at most 63 characters starting with a
// letter, made of a readable prefix of the pod's name and a hash of its
// namespace, name and UID, so that it is unique per pod whatever the
// length of the pod's name, and differs between pods of the same name in
// different namespaces (which share a tenant namespace) or with different
// UIDs (a pod deleted and created again).
func Name(pod *corev1.Pod) string {
	sum := sha256.Sum256([]byte(pod.Namespace + "/" + pod.Name + "/" + string(pod.UID)))
	hash := lowerBase32.EncodeToString(sum[:])[:hashLen]
	return prefix(pod.Name, maxName-hashLen-1) + "-" + hash
}

// prefix turns a pod name (a DNS subdomain, but any string is handled)
// into at most n characters of a DNS label that starts with a letter and
// ends with a letter or digit: dots become hyphens, upper case is lowered, a
// leading digit gets a "p" before it.
func prefix(podName string, n int) string {
	b := make([]byte, 0, n+1)
	for i := 0; i < len(podName) && len(b) < n; i++ {
		switch c := podName[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c-'A'+'a')
		default:
			b = append(b, '-')
		}
	}
	p := strings.TrimLeft(string(b), "-")
	if p != "" && p[0] >= '0' && p[0] <= '9' {
		p = "p" + p
	}
	p = strings.TrimRight(p[:min(len(p), n)], "-")
	if p == "" {
		return "shadow"
	}
	return p
}

// Namespace is the namespace of pod's shadow: tenant when the node is
// confined to it; the pod's own namespace when it asks so
// (annotations.ShadowSameNS, as in interLink); else the pod's namespace +
// "-shadow". The result of the latter is not a valid namespace when the
// pod's namespace is longer than 56 characters; Spec.Build refuses such a
// pod, and one asking for its own namespace on a node confined to another.
func Namespace(pod *corev1.Pod, tenant string) string {
	if tenant != "" {
		return tenant
	}
	if pod.Annotations[annotations.ShadowSameNS] == "true" {
		return pod.Namespace
	}
	return pod.Namespace + ShadowSuffix
}

// NodeConfigMap is the name of the ConfigMap that carries the compute node
// of the shadow name.
func NodeConfigMap(name string) string { return name + "-node" }
