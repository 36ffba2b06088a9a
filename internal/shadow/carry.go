package shadow

import (
	"fmt"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// carried is what the shadow pod takes over from the pod: its kept init
// containers and containers, the volumes they mount and, in the pod's own
// namespace, its image pull secrets.
type carried struct {
	init        []corev1.Container
	containers  []corev1.Container
	volumes     []corev1.Volume
	pullSecrets []corev1.LocalObjectReference
}

// injectedToken is the prefix of the service account token volume the API
// server adds to every pod that does not opt out.
const injectedToken = "kube-api-access-"

// carry takes pod's kept containers into a shadow in namespace ns.
//
// ConfigMaps, Secrets and claims live in the pod's namespace, and a pod can
// only use those of its own namespace. When the shadow lives there (a
// tenant namespace that is the pod's) they are carried by reference. When
// it does not, a kept container needing one is refused with a PodError
// rather than run without it. Copying them into the shadow namespace is not
// an option: a tenant namespace is shared by the shadows of every namespace
// the node serves, so a copy would hand one namespace's Secrets to the
// others.
//
// Other rules: the API server's own service account token volume
// (kube-api-access-*) is not carried, since shadows mount no token (and the
// pod's service account is not the shadow's); other token and downward API
// volumes are refused (they would describe the shadow pod); downward API
// env of the pod's metadata gets the pod's values; the pod's security
// context settings that can be set per container are copied into each kept
// container that does not set them; the pod's image pull secrets are
// carried within its own namespace only (elsewhere the kept containers'
// images must be pullable without them).
func carry(pod *corev1.Pod, ns string) (*carried, error) {
	c := &carried{}
	same := ns == pod.Namespace
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		byName[v.Name] = v
	}
	wanted := map[string]bool{}
	take := func(field string, in corev1.Container) (corev1.Container, error) {
		return carryContainer(pod, ns, field, in, byName, wanted)
	}
	initKept := keptSet(pod, annotations.DisableOffloadInitContainers)
	for i, k := range pod.Spec.InitContainers {
		if !initKept[k.Name] {
			continue
		}
		out, err := take(fmt.Sprintf("spec.initContainers[%d]", i), k)
		if err != nil {
			return nil, err
		}
		c.init = append(c.init, out)
	}
	kept := keptSet(pod, annotations.DisableOffloadContainers)
	for i, k := range pod.Spec.Containers {
		if !kept[k.Name] {
			continue
		}
		out, err := take(fmt.Sprintf("spec.containers[%d]", i), k)
		if err != nil {
			return nil, err
		}
		c.containers = append(c.containers, out)
	}
	for _, v := range pod.Spec.Volumes {
		if wanted[v.Name] {
			c.volumes = append(c.volumes, *v.DeepCopy())
		}
	}
	if same && (len(c.init) > 0 || len(c.containers) > 0) {
		c.pullSecrets = append(c.pullSecrets, pod.Spec.ImagePullSecrets...)
	}
	return c, nil
}

func carryContainer(pod *corev1.Pod, ns, field string, in corev1.Container,
	volumes map[string]corev1.Volume, wanted map[string]bool) (corev1.Container, error) {
	c := *in.DeepCopy()
	same := ns == pod.Namespace
	if len(c.VolumeDevices) > 0 {
		return c, podErr(field+".volumeDevices", "a kept container cannot use block devices")
	}
	for i := range c.Env {
		if err := carryEnv(pod, ns, fmt.Sprintf("%s.env[%d]", field, i), &c.Env[i]); err != nil {
			return c, err
		}
	}
	for i, e := range c.EnvFrom {
		if !same && (e.ConfigMapRef != nil || e.SecretRef != nil) {
			return c, podErr(fmt.Sprintf("%s.envFrom[%d]", field, i), "%s", elsewhere(pod, ns))
		}
	}
	mounts := c.VolumeMounts[:0]
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return c, podErr(field+".volumeMounts", "volume %s is not one of the pod's", m.Name)
		}
		if isInjectedToken(v) {
			continue
		}
		if err := carryVolume(pod, ns, v); err != nil {
			return c, err
		}
		wanted[v.Name] = true
		mounts = append(mounts, m)
	}
	c.VolumeMounts = mounts
	c.SecurityContext = mergeSecurity(pod.Spec.SecurityContext, c.SecurityContext)
	return c, nil
}

func carryEnv(pod *corev1.Pod, ns, field string, e *corev1.EnvVar) error {
	from := e.ValueFrom
	switch {
	case from == nil:
		return nil
	case from.ConfigMapKeyRef != nil || from.SecretKeyRef != nil:
		if ns != pod.Namespace {
			return podErr(field, "%s", elsewhere(pod, ns))
		}
	case from.FieldRef != nil:
		if v, ok := podField(pod, from.FieldRef.FieldPath); ok {
			e.Value, e.ValueFrom = v, nil
		}
	}
	return nil
}

// podField is the value of a downward API field of the pod's metadata and
// spec; status fields (the pod's IPs) are left to the shadow pod's.
func podField(pod *corev1.Pod, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	}
	for prefix, m := range map[string]map[string]string{
		"metadata.labels['":      pod.Labels,
		"metadata.annotations['": pod.Annotations,
	} {
		if key, ok := strings.CutPrefix(path, prefix); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], true
		}
	}
	return "", false
}

func carryVolume(pod *corev1.Pod, ns string, v corev1.Volume) error {
	field := "spec.volumes[" + v.Name + "]"
	same := ns == pod.Namespace
	switch {
	case v.EmptyDir != nil, v.Ephemeral != nil, v.Image != nil:
		return nil
	case v.ConfigMap != nil, v.Secret != nil, v.PersistentVolumeClaim != nil:
		if !same {
			return podErr(field, "mounted by a kept container: %s", elsewhere(pod, ns))
		}
		return nil
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.ConfigMap == nil && s.Secret == nil {
				return podErr(field, "mounted by a kept container: a projected volume in the shadow can only hold ConfigMaps and Secrets")
			}
		}
		if !same {
			return podErr(field, "mounted by a kept container: %s", elsewhere(pod, ns))
		}
		return nil
	case v.DownwardAPI != nil:
		return podErr(field, "mounted by a kept container: a downward API volume would describe the shadow pod, not this one")
	}
	return podErr(field, "mounted by a kept container: the shadow can carry emptyDir, ephemeral, image, ConfigMap, Secret, projected and claim volumes only")
}

// elsewhere says why a kept container cannot use an object of the pod's
// namespace.
func elsewhere(pod *corev1.Pod, ns string) string {
	return fmt.Sprintf("a kept container runs in the shadow namespace %s and cannot use ConfigMaps, Secrets or claims of namespace %s; "+
		"offload the container, or run the pod on a node confined to namespace %s (Network.TenantNamespace)",
		ns, pod.Namespace, pod.Namespace)
}

func isInjectedToken(v corev1.Volume) bool {
	if !strings.HasPrefix(v.Name, injectedToken) || v.Projected == nil {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// mergeSecurity fills what c leaves unset with the pod-level settings that
// also exist per container.
func mergeSecurity(pod *corev1.PodSecurityContext, c *corev1.SecurityContext) *corev1.SecurityContext {
	if pod == nil {
		return c
	}
	pod = pod.DeepCopy()
	if c == nil {
		c = &corev1.SecurityContext{}
	}
	if c.RunAsUser == nil {
		c.RunAsUser = pod.RunAsUser
	}
	if c.RunAsGroup == nil {
		c.RunAsGroup = pod.RunAsGroup
	}
	if c.RunAsNonRoot == nil {
		c.RunAsNonRoot = pod.RunAsNonRoot
	}
	if c.SELinuxOptions == nil {
		c.SELinuxOptions = pod.SELinuxOptions
	}
	if c.SeccompProfile == nil {
		c.SeccompProfile = pod.SeccompProfile
	}
	if c.AppArmorProfile == nil {
		c.AppArmorProfile = pod.AppArmorProfile
	}
	if *c == (corev1.SecurityContext{}) {
		return nil
	}
	return c
}
