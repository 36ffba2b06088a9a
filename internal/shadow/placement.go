package shadow

import (
	"maps"
	"slices"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// placement is what of a shadow pod's spec the site sets (validated by
// config): the Secrets to pull the tunnel image with, and the cluster's
// nodes the shadows may run on.
func placement(n config.Network) ([]corev1.LocalObjectReference, map[string]string, []corev1.Toleration) {
	var secrets []corev1.LocalObjectReference
	for _, name := range n.ShadowImagePullSecrets {
		secrets = append(secrets, corev1.LocalObjectReference{Name: name})
	}
	var tolerations []corev1.Toleration
	for _, t := range n.ShadowTolerations {
		tolerations = append(tolerations, corev1.Toleration{
			Key:               t.Key,
			Operator:          corev1.TolerationOperator(t.Operator),
			Value:             t.Value,
			Effect:            corev1.TaintEffect(t.Effect),
			TolerationSeconds: t.Seconds,
		})
	}
	return secrets, maps.Clone(n.ShadowNodeSelector), tolerations
}

// pullSecrets are the site's pull Secrets, then the pod's own it does not
// repeat: the pod's images run in the shadow too (kept), the tunnel image
// may come from the site's registry.
func (s Spec) pullSecrets(kept []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	out := append([]corev1.LocalObjectReference(nil), s.PullSecrets...)
	for _, r := range kept {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
