package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/sitepath"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// ShadowScope says which shadows are sluice's: those of one virtual node,
// in the namespaces sluice-vk may put them (internal/shadow's trust.go).
type ShadowScope struct {
	// Node is the virtual node's name (label sluice.io/node).
	Node string
	// CredentialsNamespace is sluice's own namespace, where sluice-vk
	// records the shadow namespaces it created.
	CredentialsNamespace string
	// TenantNamespace, on a node confined to it, is where every shadow
	// lives, and the only namespace a shadow may be in.
	TenantNamespace string
	// TrustedNamespaces are shadow namespaces sluice did not create that
	// an operator trusts (Network.TrustedShadowNamespaces).
	TrustedNamespaces []string
}

func (s ShadowScope) validate() error {
	if msgs := validation.IsValidLabelValue(s.Node); s.Node == "" || len(msgs) > 0 {
		return fmt.Errorf("shadow scope: node %q is not a label value", s.Node)
	}
	if s.TenantNamespace == "" && len(validation.IsDNS1123Label(s.CredentialsNamespace)) > 0 {
		return fmt.Errorf("shadow scope: credentials namespace %q is not a namespace", s.CredentialsNamespace)
	}
	return nil
}

// GrantSource makes a shadow's Grant from sluice's own records: the shadow
// pod, its ReplicaSet and Deployment as internal/shadow made them, the
// node ConfigMap sluice-vk writes, and the record of the shadow namespace.
// Nothing is taken from the offloaded pod, whose fields its tenant writes.
type GrantSource struct {
	Client kubernetes.Interface
	Scope  ShadowScope
}

// Grant returns what the shadow pod pod, whose token the API server found
// bound to it and to ServiceAccount sa of its namespace, may carry. It
// refuses (ErrRefused) a pod that is gone or made again (UID), that is not
// a shadow of the node, that runs as another ServiceAccount, or that is in
// a namespace sluice does not trust. Other errors are those of the API
// server, which a caller may retry.
func (g *GrantSource) Grant(ctx context.Context, pod PodRef, sa string) (*Grant, error) {
	if err := g.checkNamespace(ctx, pod.Namespace); err != nil {
		return nil, err
	}
	p, err := g.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, refuse(fmt.Sprintf("pod %s/%s is gone", pod.Namespace, pod.Name))
	case err != nil:
		return nil, fmt.Errorf("gateway: get pod %s/%s: %w", pod.Namespace, pod.Name, err)
	case p.UID != pod.UID:
		return nil, refuse(fmt.Sprintf("pod %s/%s is not the token's: its uid is %s, the token's %s (deleted and made again)", pod.Namespace, pod.Name, p.UID, pod.UID))
	case p.DeletionTimestamp != nil:
		return nil, refuse(fmt.Sprintf("pod %s/%s is being deleted", pod.Namespace, pod.Name))
	}
	name, podUID := p.Labels[shadow.LabelShadow], p.Labels[shadow.LabelPodUID]
	if why := g.notOurs(p.ObjectMeta, name, podUID); why != "" {
		return nil, refuse(fmt.Sprintf("pod %s/%s is not a shadow of node %s: %s", pod.Namespace, pod.Name, g.Scope.Node, why))
	}
	if got := serviceAccount(p.Spec.ServiceAccountName); got != sa {
		return nil, refuse(fmt.Sprintf("pod %s/%s runs as ServiceAccount %s, the token is of %s", pod.Namespace, pod.Name, got, sa))
	}
	d, err := g.deployment(ctx, p, name)
	if err != nil {
		return nil, err
	}
	if why := g.notOurs(d.ObjectMeta, name, podUID); why != "" {
		return nil, refuse(fmt.Sprintf("deployment %s/%s is not a shadow of node %s: %s", d.Namespace, d.Name, g.Scope.Node, why))
	}
	if why := sameSpec(&p.Spec, &d.Spec.Template.Spec); why != "" {
		return nil, refuse(fmt.Sprintf("pod %s/%s does not run its shadow's spec: %s", pod.Namespace, pod.Name, why))
	}
	if got := serviceAccount(d.Spec.Template.Spec.ServiceAccountName); got != sa {
		return nil, refuse(fmt.Sprintf("shadow %s/%s runs its pods as ServiceAccount %s, the token is of %s", d.Namespace, d.Name, got, sa))
	}
	offloaded, err := g.offloaded(d, podUID)
	if err != nil {
		return nil, err
	}
	carried, err := shadow.CarriedBy(d)
	if err != nil {
		return nil, refuse(err.Error())
	}
	grant := &Grant{
		Pod:          offloaded,
		Shadow:       PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		ForwardPorts: carried.ForwardPorts,
		SocksPort:    carried.SocksPort,
		// As the job is made (shadow.RunsRelay).
		Relayed: carried.Relayed,
	}
	for _, port := range carried.ReversePorts {
		grant.SocketNames = append(grant.SocketNames, relay.SocketName(uint16(port)))
	}
	if carried.SocksPort != 0 {
		grant.SocketNames = append(grant.SocketNames, relay.SocketName(uint16(carried.SocksPort)))
	}
	if err := g.where(ctx, d, podUID, grant); err != nil {
		return nil, err
	}
	return grant, nil
}

// checkNamespace refuses a shadow namespace sluice does not trust: on a
// node confined to a tenant namespace, any other; else one neither an
// operator trusts nor recorded by sluice-vk under its current UID (made by
// someone else, or deleted and made again).
func (g *GrantSource) checkNamespace(ctx context.Context, ns string) error {
	if t := g.Scope.TenantNamespace; t != "" {
		if ns != t {
			return refuse(fmt.Sprintf("namespace %s is not node %s's: it is confined to namespace %s", ns, g.Scope.Node, t))
		}
		return nil
	}
	if slices.Contains(g.Scope.TrustedNamespaces, ns) {
		return nil
	}
	live, err := g.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return refuse(fmt.Sprintf("namespace %s is gone", ns))
	case err != nil:
		return fmt.Errorf("gateway: get namespace %s: %w", ns, err)
	case live.DeletionTimestamp != nil:
		return refuse(fmt.Sprintf("namespace %s is being deleted", ns))
	}
	uid, found, err := shadow.RecordedUID(ctx, g.Client, g.Scope.CredentialsNamespace, ns)
	switch {
	case err != nil:
		return fmt.Errorf("gateway: %w", err)
	case !found:
		return refuse(fmt.Sprintf("namespace %s is not trusted: sluice did not create it (no record %s/%s) and it is not in Network.TrustedShadowNamespaces",
			ns, g.Scope.CredentialsNamespace, shadow.RecordName(ns)))
	case uid != live.UID:
		return refuse(fmt.Sprintf("namespace %s is not trusted: it was deleted and made again since sluice created it (uid %s, recorded %s)", ns, live.UID, uid))
	}
	return nil
}

// notOurs says why meta is not that of an object of the shadow name of the
// offloaded pod podUID on the scope's node, or "" when it is.
func (g *GrantSource) notOurs(meta metav1.ObjectMeta, name, podUID string) string {
	want := map[string]string{
		shadow.LabelManagedBy: shadow.ManagedBy,
		shadow.LabelNode:      g.Scope.Node,
		shadow.LabelShadow:    name,
		shadow.LabelPodUID:    podUID,
	}
	for _, k := range []string{shadow.LabelManagedBy, shadow.LabelNode, shadow.LabelShadow, shadow.LabelPodUID} {
		if v, ok := meta.Labels[k]; !ok || v != want[k] || v == "" {
			return fmt.Sprintf("label %s is %q", k, meta.Labels[k])
		}
	}
	return ""
}

// deployment returns the shadow Deployment p belongs to, following its
// controllers (ReplicaSet, then Deployment) by UID, so that an object made
// again under the same name is not taken for the one that made p.
func (g *GrantSource) deployment(ctx context.Context, p *corev1.Pod, name string) (*appsv1.Deployment, error) {
	where := p.Namespace + "/" + p.Name
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.APIVersion != "apps/v1" || ref.Kind != "ReplicaSet" {
		return nil, refuse(fmt.Sprintf("pod %s is not a shadow: no ReplicaSet controls it", where))
	}
	rs, err := g.Client.AppsV1().ReplicaSets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err := owned(rs, err, ref.UID, "replicaset "+p.Namespace+"/"+ref.Name); err != nil {
		return nil, err
	}
	ref = metav1.GetControllerOf(rs)
	if ref == nil || ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != name {
		return nil, refuse(fmt.Sprintf("pod %s is not a shadow: Deployment %s does not control its ReplicaSet %s", where, name, rs.Name))
	}
	d, err := g.Client.AppsV1().Deployments(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err := owned(d, err, ref.UID, "deployment "+p.Namespace+"/"+ref.Name); err != nil {
		return nil, err
	}
	return d, nil
}

// owned turns the result of getting an owner, what (obj, err), into a
// refusal when it is gone or is not the one that owns (UID want), or into
// the API's error.
func owned(obj metav1.Object, err error, want types.UID, what string) error {
	switch {
	case apierrors.IsNotFound(err):
		return refuse(what + " is gone")
	case err != nil:
		return fmt.Errorf("gateway: get %s: %w", what, err)
	case obj.GetUID() != want:
		return refuse(fmt.Sprintf("%s was made again (uid %s, the owner's %s)", what, obj.GetUID(), want))
	}
	return nil
}

// offloaded names the pod whose shadow d is: its annotation sluice.io/pod
// and label sluice.io/pod-uid, which sluice-vk wrote, and which must give
// d's name (a hash of the three) and namespace.
func (g *GrantSource) offloaded(d *appsv1.Deployment, podUID string) (PodRef, error) {
	ns, name, ok := strings.Cut(d.Annotations[shadow.AnnotationPod], "/")
	ref := PodRef{Namespace: ns, Name: name, UID: types.UID(podUID)}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: ref.UID}}
	switch {
	case !ok || ns == "" || name == "":
		return PodRef{}, refuse(fmt.Sprintf("deployment %s/%s names no pod (%s %q)", d.Namespace, d.Name, shadow.AnnotationPod, d.Annotations[shadow.AnnotationPod]))
	case shadow.Name(pod) != d.Name:
		return PodRef{}, refuse(fmt.Sprintf("deployment %s/%s is not the shadow of pod %s/%s (uid %s): that one is %s", d.Namespace, d.Name, ns, name, podUID, shadow.Name(pod)))
	case d.Namespace != g.Scope.TenantNamespace && d.Namespace != ns && d.Namespace != ns+shadow.ShadowSuffix:
		return PodRef{}, refuse(fmt.Sprintf("deployment %s/%s is not in the shadow namespace of pod %s/%s", d.Namespace, d.Name, ns, name))
	}
	return ref, nil
}

// where fills in grant the node, job and socket directory that sluice-vk
// wrote in the shadow's node ConfigMap, one d owns.
func (g *GrantSource) where(ctx context.Context, d *appsv1.Deployment, podUID string, grant *Grant) error {
	name := shadow.NodeConfigMap(d.Name)
	cm, err := g.Client.CoreV1().ConfigMaps(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return refuse(fmt.Sprintf("shadow %s/%s has no node ConfigMap %s", d.Namespace, d.Name, name))
	case err != nil:
		return fmt.Errorf("gateway: get configmap %s/%s: %w", d.Namespace, name, err)
	}
	if why := g.notOurs(cm.ObjectMeta, d.Name, podUID); why != "" {
		return refuse(fmt.Sprintf("configmap %s/%s is not a shadow's: %s", d.Namespace, name, why))
	}
	if !slices.ContainsFunc(cm.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == d.UID && o.Kind == "Deployment" }) {
		return refuse(fmt.Sprintf("configmap %s/%s is not owned by its shadow's deployment (uid %s)", d.Namespace, name, d.UID))
	}
	node, job, dir := cm.Data[shadow.NodeKey], cm.Data[shadow.JobKey], cm.Data[shadow.SocketDirKey]
	var errs []error
	if node != "" {
		errs = append(errs, tunnel.CheckNode(node))
	}
	errs = append(errs, tunnel.CheckJob(job))
	if dir != "" {
		errs = append(errs, sitepath.Check(dir))
	}
	if err := errors.Join(errs...); err != nil {
		return refuse(fmt.Sprintf("configmap %s/%s: %v", d.Namespace, name, err))
	}
	grant.Node, grant.Job, grant.SocketDir = node, job, dir
	grant.NodeConfigMap = types.NamespacedName{Namespace: d.Namespace, Name: name}
	return nil
}

// serviceAccount is the ServiceAccount a pod spec's name means.
func serviceAccount(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// sameSpec says how the pod spec got differs from want, its shadow
// Deployment's template, in what a pod's code and files are (containers,
// images, commands, environment, mounts, volumes), or "" when it does not.
// A ReplicaSet adopts any pod whose labels match its selector, which
// whoever may make pods in the namespace can copy: without this check,
// such a pod would run code of its maker's with the shadow's grant.
func sameSpec(got, want *corev1.PodSpec) string {
	if why := sameContainers("container", got.Containers, want.Containers); why != "" {
		return why
	}
	if why := sameContainers("init container", got.InitContainers, want.InitContainers); why != "" {
		return why
	}
	if !apiequality.Semantic.DeepEqual(got.Volumes, want.Volumes) {
		return "its volumes differ"
	}
	// Shared namespaces let the pod's other containers (kept ones, the
	// tenant's code) or the node's processes read the token through /proc.
	if !apiequality.Semantic.DeepEqual(
		[]any{got.ShareProcessNamespace, got.HostPID, got.HostIPC, got.HostNetwork},
		[]any{want.ShareProcessNamespace, want.HostPID, want.HostIPC, want.HostNetwork}) {
		return "it shares namespaces the shadow's does not"
	}
	// A template has none: one added (kubectl debug) may mount the
	// pod's volumes, the token's among them.
	if n := len(got.EphemeralContainers); n > 0 {
		return fmt.Sprintf("it has %d ephemeral containers", n)
	}
	return ""
}

func sameContainers(kind string, got, want []corev1.Container) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d %ss, the shadow's %d", len(got), kind, len(want))
	}
	for i := range got {
		g, w := &got[i], &want[i]
		same := g.Name == w.Name && g.Image == w.Image && g.WorkingDir == w.WorkingDir &&
			apiequality.Semantic.DeepEqual(
				// Hooks and exec probes run commands beside the token too.
				[]any{g.Command, g.Args, g.Env, g.EnvFrom, g.VolumeMounts, g.VolumeDevices, g.SecurityContext,
					g.Lifecycle, g.LivenessProbe, g.ReadinessProbe, g.StartupProbe},
				[]any{w.Command, w.Args, w.Env, w.EnvFrom, w.VolumeMounts, w.VolumeDevices, w.SecurityContext,
					w.Lifecycle, w.LivenessProbe, w.ReadinessProbe, w.StartupProbe})
		if !same {
			return fmt.Sprintf("%s %s is not the shadow's %s", kind, g.Name, w.Name)
		}
	}
	return ""
}
