package shadow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Objects are the API objects of one pod's shadow, as Spec.Build makes them.
type Objects struct {
	// Namespace and Name are the shadow's (see Namespace and Name).
	Namespace string
	Name      string
	// Forward and Reverse tell which tunnel containers run (see Needed).
	Forward bool
	Reverse bool
	// Deployment runs the tunnels and the kept containers.
	Deployment *appsv1.Deployment
	// Service reaches the pod's TCP ports; nil when it exposes none.
	Service *corev1.Service
	// ConfigMap is Name-node; its node, job and socket directory keys are
	// "" until SetNode.
	ConfigMap *corev1.ConfigMap
}

// Build makes the objects of pod's shadow. It returns nil and no error for
// a pod that gets no shadow (Wanted is false). Errors caused by the pod are
// *jobscript.PodError, or *annotations.Refusal for a malformed reverse tunnel
// annotation: the provider refuses such a pod. Other errors are in s.
func (s Spec) Build(pod *corev1.Pod) (*Objects, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !Wanted(pod) {
		return nil, nil
	}
	ns, err := s.checkPod(pod)
	if err != nil {
		return nil, err
	}
	uid := string(pod.UID)
	ports, err := exposedPorts(pod)
	if err != nil {
		return nil, err
	}
	rev, err := annotations.Parse(pod.Annotations, pod.Namespace)
	if err != nil {
		return nil, err
	}
	if rev != nil && s.SocketDirRoot == "" {
		return nil, podErr("metadata.annotations["+annotations.ReverseForwards+"]",
			"the reverse tunnel needs a socket directory on the compute node, and this node has no Site.SocketDirRoot")
	}
	kept, err := carry(pod, ns)
	if err != nil {
		return nil, err
	}
	o := &Objects{Namespace: ns, Name: Name(pod), Reverse: rev != nil}
	relayed := RunsRelay(pod, s.SocketDirRoot != "")
	containers, volumes, err := s.podContents(o, uid, ports, rev, relayed, kept)
	if err != nil {
		return nil, err
	}

	labels := objectLabels(o.Name, uid, s.NodeName)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:        name,
			Namespace:   ns,
			Labels:      maps.Clone(labels),
			Annotations: map[string]string{AnnotationPod: pod.Namespace + "/" + pod.Name},
		}
	}
	if o.Deployment, err = s.deployment(meta(o.Name), pod, containers, kept, volumes, relayed); err != nil {
		return nil, err
	}
	if len(ports) > 0 {
		if o.Service, err = service(meta(o.Name), o.Name, ports); err != nil {
			return nil, err
		}
	}
	o.ConfigMap = &corev1.ConfigMap{ObjectMeta: meta(NodeConfigMap(o.Name)), Data: map[string]string{NodeKey: "", JobKey: "", SocketDirKey: ""}}
	if err := stamp(&o.ConfigMap.ObjectMeta, nil); err != nil {
		return nil, err
	}
	return o, nil
}

// checkPod checks what the shadow takes from pod as it is, and returns the
// shadow's namespace.
func (s Spec) checkPod(pod *corev1.Pod) (string, error) {
	// The UID names the socket directory: no dots, so no "..".
	uid := string(pod.UID)
	if uid == "" || len(validation.IsValidLabelValue(uid)) > 0 || strings.Contains(uid, ".") {
		return "", podErr("metadata.uid", "%q is not a pod UID", uid)
	}
	if err := s.checkSameNamespace(pod); err != nil {
		return "", err
	}
	ns := Namespace(pod, s.TenantNamespace)
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return "", podErr("metadata.namespace", "the shadow namespace %s is not a DNS label (%s): the namespace is too long for a node not confined to a tenant namespace",
			ns, strings.Join(msgs, "; "))
	}
	return ns, checkKeptNames(pod)
}

// podContents are the containers and volumes of the shadow pod: the
// tunnels the pod needs with their volumes, then the kept containers and
// theirs; a hold container when there is nothing else. It sets o.Forward.
func (s Spec) podContents(o *Objects, uid string, ports []exposed, rev *annotations.Reverse, relayed bool, kept *carried) ([]corev1.Container, []corev1.Volume, error) {
	var forwarded []int32
	var forwardPorts []corev1.ContainerPort
	for _, e := range ports {
		if !e.kept {
			forwarded = append(forwarded, e.port)
			forwardPorts = append(forwardPorts, corev1.ContainerPort{Name: e.name, ContainerPort: e.port, Protocol: corev1.ProtocolTCP})
		}
	}
	o.Forward = len(forwarded) > 0
	fwdMetrics, revMetrics := metricsPorts(ports, o.Forward, o.Reverse)
	var containers []corev1.Container
	if o.Forward {
		c := s.tunnelContainer(ContainerForward, s.forwardArgs(forwarded, fwdMetrics, relayed), forwardPorts, fwdMetrics)
		c.ReadinessProbe = readinessProbe(fwdMetrics)
		containers = append(containers, c)
	}
	if o.Reverse {
		containers = append(containers, s.tunnelContainer(ContainerReverse,
			s.reverseArgs(rev, revMetrics), nil, revMetrics))
	}
	var volumes []corev1.Volume
	if len(containers) > 0 {
		volumes = s.tunnelVolumes(o.Name)
	}
	containers = append(containers, kept.containers...)
	if len(containers) == 0 {
		containers = append(containers, s.holdContainer())
	}
	if err := checkReserved(containers, kept); err != nil {
		return nil, nil, err
	}
	renameKept(kept, volumes)
	return containers, append(volumes, kept.volumes...), nil
}

func (s Spec) deployment(meta metav1.ObjectMeta, pod *corev1.Pod, containers []corev1.Container, kept *carried, volumes []corev1.Volume, relayed bool) (*appsv1.Deployment, error) {
	one, history, no := int32(1), int32(2), false
	if pod.Namespace == meta.Namespace {
		// Within the pod's namespace the pod owns its shadow, so that the
		// garbage collector removes a shadow its pod left behind.
		meta.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		}}
	}
	template := metav1.ObjectMeta{Labels: maps.Clone(meta.Labels), Annotations: map[string]string{
		AnnotationPod: meta.Annotations[AnnotationPod],
		"kubectl.kubernetes.io/default-container": containers[0].Name,
	}}
	if relayed {
		template.Annotations[AnnotationRelayed] = "true"
	}
	d := &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas:             &one,
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{LabelShadow: meta.Name}},
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			RevisionHistoryLimit: &history,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: template,
				Spec: corev1.PodSpec{
					SecurityContext:              podSecurity(pod, kept),
					AutomountServiceAccountToken: &no,
					EnableServiceLinks:           &no,
					InitContainers:               kept.init,
					Containers:                   containers,
					ReadinessGates:               []corev1.PodReadinessGate{{ConditionType: ConditionOffloadedReady}},
					Volumes:                      volumes,
					ImagePullSecrets:             s.pullSecrets(kept.pullSecrets),
					NodeSelector:                 maps.Clone(s.NodeSelector),
					Tolerations:                  slices.Clone(s.Tolerations),
				},
			},
		},
	}
	return d, stamp(&d.ObjectMeta, d.Spec)
}

func service(meta metav1.ObjectMeta, name string, ports []exposed) (*corev1.Service, error) {
	svc := &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelShadow: name},
		},
	}
	for _, e := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name:       e.name,
			Protocol:   corev1.ProtocolTCP,
			Port:       e.port,
			TargetPort: intstr.FromInt32(e.port),
		})
	}
	return svc, stamp(&svc.ObjectMeta, svc.Spec)
}

// stamp records in meta the hash of spec and of meta's labels, annotations
// and owners, which Ensure compares instead of the objects themselves (the
// API server fills in defaults).
func stamp(meta *metav1.ObjectMeta, spec any) error {
	delete(meta.Annotations, annotationSpecHash)
	data, err := json.Marshal([]any{meta.Labels, meta.Annotations, meta.OwnerReferences, spec})
	if err != nil {
		return fmt.Errorf("shadow: hash %s: %w", meta.Name, err)
	}
	sum := sha256.Sum256(data)
	meta.Annotations[annotationSpecHash] = hex.EncodeToString(sum[:8])
	return nil
}

// checkReserved refuses a kept container or volume whose name is one of
// the shadow's own containers.
func checkReserved(containers []corev1.Container, kept *carried) error {
	seen := map[string]bool{}
	for _, c := range slices.Concat(containers, kept.init) {
		if seen[c.Name] {
			return podErr("metadata.annotations["+annotations.DisableOffloadContainers+"]",
				"kept container %s has the name of one of the shadow's own containers; rename it", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// renameKept renames the kept volumes whose names the tunnel volumes use,
// in the volumes and in the kept containers' mounts.
func renameKept(kept *carried, ours []corev1.Volume) {
	taken := map[string]bool{}
	for _, v := range ours {
		taken[v.Name] = true
	}
	for _, v := range kept.volumes {
		taken[v.Name] = true
	}
	renamed := map[string]string{}
	for i, v := range kept.volumes {
		if !isOurs(ours, v.Name) {
			continue
		}
		name := "kept-" + v.Name
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("kept-%s-%d", v.Name, n)
		}
		taken[name] = true
		renamed[v.Name] = name
		kept.volumes[i].Name = name
	}
	for _, cs := range [][]corev1.Container{kept.init, kept.containers} {
		for i := range cs {
			for j, m := range cs[i].VolumeMounts {
				if n, ok := renamed[m.Name]; ok {
					cs[i].VolumeMounts[j].Name = n
				}
			}
		}
	}
}

func isOurs(ours []corev1.Volume, name string) bool {
	for _, v := range ours {
		if v.Name == name {
			return true
		}
	}
	return false
}

// checkSameNamespace checks a pod's annotations.ShadowSameNS: "true" or
// "false"; "true" on a node confined to another namespace than the pod's
// is refused (the node makes shadows in its tenant namespace only), and so
// is "true" where the gateway would not trust the pod's namespace, or
// where the site's SSH credentials would be copied into the pod's
// namespace (ReplicateCredentials), readable to whoever reads its Secrets.
func (s Spec) checkSameNamespace(pod *corev1.Pod) error {
	v, ok := pod.Annotations[annotations.ShadowSameNS]
	if !ok || v == "false" {
		return nil
	}
	field := "metadata.annotations[" + annotations.ShadowSameNS + "]"
	switch {
	case v != "true":
		return podErr(field, "%q: want true or false", v)
	case s.TenantNamespace != "" && pod.Namespace != s.TenantNamespace:
		return podErr(field, "node %s is confined to namespace %s (Network.TenantNamespace), where it makes every shadow; "+
			"the shadow of a pod of namespace %s cannot be made in the pod's namespace: run the pod in %s or drop the annotation",
			s.NodeName, s.TenantNamespace, pod.Namespace, s.TenantNamespace)
	case s.gatewayOn() && s.TenantNamespace == "" && !slices.Contains(s.TrustedNamespaces, pod.Namespace):
		return podErr(field, "the tunnel gateway carries the tunnels of shadows in the namespaces sluice created or an operator trusts only, "+
			"and whoever may make pods in namespace %s could pass for its shadow there; drop the annotation (the shadow goes to %s)",
			pod.Namespace, pod.Namespace+ShadowSuffix)
	case s.ReplicateCredentials && s.TenantNamespace == "" && pod.Namespace != s.CredentialsNamespace:
		return podErr(field, "the shadow would need the site's SSH credentials copied into namespace %s "+
			"(Network.SSH.ReplicateCredentials), where whoever reads its Secrets would have them; "+
			"drop the annotation (the shadow goes to %s), or run the pod on a node confined to %s (Network.TenantNamespace)",
			pod.Namespace, pod.Namespace+ShadowSuffix, pod.Namespace)
	}
	return nil
}
