package shadow

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// GatewayAudience is the audience of the ServiceAccount token a shadow
// proves itself with to the gateway (SPEC S14): sluice's own, so that the
// token is good for nothing else, the API server included.
const GatewayAudience = "sluice-gateway"

// gatewayTokenSeconds is the life of a shadow's gateway token; the kubelet
// renews a projected token once 80% of it is gone.
const gatewayTokenSeconds = 3600

// Where the tunnel containers find the gateway's files, with the gateway.
const (
	mountGatewayToken = "/var/run/secrets/sluice/gateway"
	mountGatewayHosts = "/etc/sluice/gateway-hosts"
	keyGatewayToken   = "token"
	volGatewayToken   = "gateway-token"
	volGatewayHosts   = "gateway-hosts"
)

// gatewayOn says that the tunnels go through the gateway: the shadow holds
// no site credential, only its token and the gateway's host keys.
func (s Spec) gatewayOn() bool { return s.GatewayAddress != "" }

// gatewayArgs are the flags both tunnel commands start with through the
// gateway, instead of commonArgs' site login: the gateway, the token to
// prove the shadow with, and the node file. The pacing of reconnections
// to the login node is not among them: the gateway holds those
// connections, and the client refuses --reconnect-spread with --gateway.
func (s Spec) gatewayArgs() []string {
	return []string{
		"--gateway=" + s.GatewayAddress,
		"--gateway-token=" + path.Join(mountGatewayToken, keyGatewayToken),
		"--gateway-known-hosts=" + path.Join(mountGatewayHosts, keyKnownHosts),
		"--node-file=" + path.Join(mountNode, NodeKey),
	}
}

func gatewayMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: volGatewayToken, MountPath: mountGatewayToken, ReadOnly: true},
		{Name: volGatewayHosts, MountPath: mountGatewayHosts, ReadOnly: true},
		{Name: volNode, MountPath: mountNode, ReadOnly: true},
	}
}

// gatewayVolumes are the tunnel volumes of the shadow name with the
// gateway: the pod-bound token of the pod's ServiceAccount for
// GatewayAudience (the kubelet renews it), the gateway's host keys and the
// node ConfigMap.
func (s Spec) gatewayVolumes(name string) []corev1.Volume {
	seconds := int64(gatewayTokenSeconds)
	return []corev1.Volume{
		{Name: volGatewayToken, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience:          GatewayAudience,
				ExpirationSeconds: &seconds,
				Path:              keyGatewayToken,
			}}},
		}}},
		{Name: volGatewayHosts, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.GatewayHostKeys},
			Items:                []corev1.KeyToPath{{Key: keyKnownHosts, Path: keyKnownHosts}},
		}}},
		{Name: volNode, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: NodeConfigMap(name)},
		}}},
	}
}

// validateGateway checks the gateway's address and host keys, when on.
func (s Spec) validateGateway(bad func(field, format string, args ...any)) {
	if !s.gatewayOn() {
		return
	}
	if err := hostname.CheckHostPort(s.GatewayAddress); err != nil {
		bad("GatewayAddress", "%v", err)
	}
	if msgs := validation.IsDNS1123Subdomain(s.GatewayHostKeys); len(msgs) > 0 {
		bad("GatewayHostKeys", "%q: %v", s.GatewayHostKeys, msgs)
	}
}

// gatewayPublished checks that the gateway has published its host keys in
// the credentials namespace (the chart makes that ConfigMap empty, and the
// gateway fills it at start), where a shadow's come from when they are
// copied or when the shadow lives there. A shadow made before would mount an empty
// known_hosts, its copy or, on a confined node, the ConfigMap itself, and
// could pin no gateway: until then Ensure returns this error, and the pod
// waits and is tried again.
func (m *Manager) gatewayPublished(ctx context.Context) error {
	cm, err := m.Client.CoreV1().ConfigMaps(m.Spec.CredentialsNamespace).Get(ctx, m.Spec.GatewayHostKeys, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("shadow: read the gateway's host keys %s/%s: %w", m.Spec.CredentialsNamespace, m.Spec.GatewayHostKeys, err)
	}
	if strings.TrimSpace(cm.Data[keyKnownHosts]) == "" {
		return fmt.Errorf("shadow: the gateway has not published its host keys in %s/%s (key %s) yet",
			m.Spec.CredentialsNamespace, m.Spec.GatewayHostKeys, keyKnownHosts)
	}
	return nil
}
