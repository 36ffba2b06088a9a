package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"go.yaml.in/yaml/v3"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// rendered is what `helm template` made, by kind.
type rendered struct {
	deployments  []*appsv1.Deployment
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	clusterRoles []*rbacv1.ClusterRole
	roles        []*rbacv1.Role
	netPolicies  []*networkingv1.NetworkPolicy
	pdbs         []*policyv1.PodDisruptionBudget
	vaps         []*admissionv1.ValidatingAdmissionPolicy
	vapBindings  []*admissionv1.ValidatingAdmissionPolicyBinding
	other        []string // kinds outside the client-go scheme
	services     []*corev1.Service
	// hooks are the objects of Helm hooks (helm.sh/hook), apart from
	// sluice-vk's own and helm test's
	hooks []runtime.Object
	// gateway are the tunnel gateway's objects (label
	// app.kubernetes.io/component=gateway), apart from sluice-vk's; nil
	// when there are none
	gateway *rendered

	// tests are the objects of helm test (helm.sh/hook: test)
	tests []runtime.Object
}

// componentLabel marks the gateway's objects.
const componentLabel = "app.kubernetes.io/component"

func render(t *testing.T, name string, args ...string) rendered {
	t.Helper()
	out, err := template(t, append([]string{"-f", values(name)}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

// decode sorts the objects of a `helm template` output by kind.
func decode(t *testing.T, out string) rendered {
	t.Helper()
	var r rendered
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if runtime.IsNotRegisteredError(err) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("decode %q: %v", doc, err)
			}
			r.other = append(r.other, meta.Kind)
			continue
		}
		if err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		if m, ok := obj.(metav1.Object); ok && m.GetAnnotations()["helm.sh/hook"] == "test" {
			r.tests = append(r.tests, obj)
			continue
		}
		if m, ok := obj.(metav1.Object); ok && m.GetAnnotations()["helm.sh/hook"] != "" {
			r.hooks = append(r.hooks, obj)
			continue
		}
		into := &r
		if m, ok := obj.(metav1.Object); ok && m.GetLabels()[componentLabel] == "gateway" {
			if r.gateway == nil {
				r.gateway = &rendered{}
			}
			into = r.gateway
		}
		into.add(obj)
	}
	return r
}

// add files obj by its kind.
func (r *rendered) add(obj runtime.Object) {
	{
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployments = append(r.deployments, o)
		case *corev1.ConfigMap:
			r.configMaps = append(r.configMaps, o)
		case *corev1.Secret:
			r.secrets = append(r.secrets, o)
		case *rbacv1.ClusterRole:
			r.clusterRoles = append(r.clusterRoles, o)
		case *rbacv1.Role:
			r.roles = append(r.roles, o)
		case *networkingv1.NetworkPolicy:
			r.netPolicies = append(r.netPolicies, o)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		case *admissionv1.ValidatingAdmissionPolicy:
			r.vaps = append(r.vaps, o)
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			r.vapBindings = append(r.vapBindings, o)
		case *corev1.Service:
			r.services = append(r.services, o)
		}
	}
}

func (r rendered) configMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	for _, c := range r.configMaps {
		if c.Namespace == ns && c.Name == name {
			return c
		}
	}
	t.Fatalf("no ConfigMap %s/%s", ns, name)
	return nil
}

// TestConfigValidatedBySluice: the rendered configuration file is one that
// sluice-vk accepts, with the pod's IP given by --internal-ip, and the
// Deployment runs the image of the chart's appVersion.
func TestConfigValidatedBySluice(t *testing.T) {
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, name)
			data := r.configMap(t, "sluice-system", "sluice-config").Data["config.yaml"]
			cfg, err := config.Parse([]byte(data), func(c *config.Config) { c.Node.InternalIP = "10.88.0.7" })
			if err != nil {
				t.Fatalf("sluice-vk refuses the rendered configuration: %v\n%s", err, data)
			}
			if cfg.Node.KubeletAPI.Listen != "10.88.0.7:10250" {
				t.Errorf("kubelet API listens on %s; want the pod's IP", cfg.Node.KubeletAPI.Listen)
			}
			if len(r.deployments) != 1 {
				t.Fatalf("%d Deployments; want 1", len(r.deployments))
			}
			c := r.deployments[0].Spec.Template.Spec.Containers[0]
			if c.Image != "ghcr.io/sluice-hpc/sluice-vk:v0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("image %s (%s); want the appVersion's, IfNotPresent", c.Image, c.ImagePullPolicy)
			}
			if !slices.Contains(c.Args, "--internal-ip=$(POD_IP)") {
				t.Errorf("args %q: no --internal-ip from the pod's IP", c.Args)
			}
			if name == "tenant" && (!cfg.Network.RefuseForeignPods || cfg.Network.SSH.KeySecret != "" || cfg.Network.Gateway.Address == "") {
				t.Errorf("tenant: RefuseForeignPods %v, KeySecret %q, Gateway %+v; want true, and the gateway instead of a key Secret",
					cfg.Network.RefuseForeignPods, cfg.Network.SSH.KeySecret, cfg.Network.Gateway)
			}
		})
	}
}

// namespaced are the resources a confined node may touch in its tenant
// namespace only.
var namespaced = []string{"configmaps", "secrets", "services", "deployments", "serviceaccounts/token", "namespaces", "pods/log"}

// TestTenantRBAC: a confined node's ClusterRole gives no right on
// ConfigMaps, Secrets, Services, Deployments or namespaces; its Role in the
// tenant namespace does and, without the gateway, its credentials are made
// there (with it, TestGatewayConfinedNoCredentialOutside).
func TestTenantRBAC(t *testing.T) {
	r := render(t, "tenant", "--set", "gateway.enabled=false")
	if len(r.clusterRoles) != 1 {
		t.Fatalf("%d ClusterRoles; want 1", len(r.clusterRoles))
	}
	for _, rule := range r.clusterRoles[0].Rules {
		for _, res := range rule.Resources {
			if slices.Contains(namespaced, res) {
				t.Errorf("ClusterRole grants %v on %s", rule.Verbs, res)
			}
		}
	}
	var tenant *rbacv1.Role
	for _, role := range r.roles {
		switch role.Namespace {
		case "team-a":
			tenant = role
		case "kube-node-lease":
		default:
			t.Errorf("Role in namespace %s", role.Namespace)
		}
	}
	if tenant == nil {
		t.Fatal("no Role in the tenant namespace team-a")
	}
	var granted []string
	for _, rule := range tenant.Rules {
		granted = append(granted, rule.Resources...)
	}
	for _, res := range []string{"configmaps", "secrets", "services", "deployments"} {
		if !slices.Contains(granted, res) {
			t.Errorf("tenant Role lacks %s (has %v)", res, granted)
		}
	}
	r.configMap(t, "team-a", "sluice-login-hosts")
	r.configMap(t, "team-a", "sluice-node-hosts")
	if len(r.secrets) != 0 {
		t.Errorf("%d Secrets made; want none with credentials.existingSecret", len(r.secrets))
	}
	// the key Secret in team-a is sluice-vk's to write, from the mounted
	// existingSecret: the chart asks for it
	if args := r.deployments[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--publish-key-secret") {
		t.Errorf("args %q: no --publish-key-secret with existingSecret on a confined node", args)
	}
	if !slices.Contains(r.other, "ServiceMonitor") {
		t.Errorf("no ServiceMonitor (other kinds: %v)", r.other)
	}
}

// TestClusterRBAC: a node that is not confined gets the shadows' rights
// cluster-wide, and its key is made into a Secret.
func TestClusterRBAC(t *testing.T) {
	r := render(t, "default")
	if args := r.deployments[0].Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--publish-key-secret") {
		t.Errorf("args %q: --publish-key-secret on a node that is not confined", args)
	}
	var granted []string
	for _, rule := range r.clusterRoles[0].Rules {
		granted = append(granted, rule.Resources...)
	}
	for _, res := range []string{"nodes", "nodes/status", "pods", "pods/status", "tokenreviews", "subjectaccessreviews", "secrets", "configmaps"} {
		if !slices.Contains(granted, res) {
			t.Errorf("ClusterRole lacks %s", res)
		}
	}
	for _, role := range r.roles {
		if role.Namespace != "kube-node-lease" {
			t.Errorf("Role in namespace %s; want only kube-node-lease's", role.Namespace)
		}
	}
	if len(r.secrets) != 1 || len(r.secrets[0].Data["ssh-privatekey"]) == 0 {
		t.Errorf("Secrets %v; want one holding ssh-privatekey", r.secrets)
	}
}

// TestLeaderElection: with leaderElection, the replicas elect a leader on the
// Lease sluice-vk-<NodeName> in the release's namespace, with the rights on
// that Lease only.
func TestLeaderElection(t *testing.T) {
	r := render(t, "ha")
	d := r.deployments[0]
	if *d.Spec.Replicas != 2 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("replicas %d, strategy %s; want 2, RollingUpdate", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--leader-elect", "--leader-elect-namespace=sluice-system", "--leader-elect-lease-duration=8s"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	var lease *rbacv1.Role
	for _, role := range r.roles {
		if role.Namespace == "sluice-system" {
			lease = role
		}
	}
	if lease == nil {
		t.Fatal("no Role in the release's namespace")
	}
	for _, rule := range lease.Rules {
		if !slices.Equal(rule.Resources, []string{"leases"}) || (len(rule.ResourceNames) > 0 && !slices.Equal(rule.ResourceNames, []string{"sluice-vk-hpc-a"})) {
			t.Errorf("leader Role rule %+v; want the Lease sluice-vk-hpc-a only", rule)
		}
	}
}

// TestShadowNamespaceRecords: a node that is not confined, with the
// tunnel on, records the shadow namespaces it creates in ConfigMaps of the
// release's namespace: its Role there grants get, create and update on
// ConfigMaps, nothing more; Network.TrustedShadowNamespaces reaches the
// configuration. A confined node makes no shadow namespace: no such Role.
func TestShadowNamespaceRecords(t *testing.T) {
	r := render(t, "default", "--set", "config.Network.EnableTunnel=true", "--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAA",
		"--set", "config.Network.TrustedShadowNamespaces={team-a-shadow}")
	var records *rbacv1.Role
	for _, role := range r.roles {
		if role.Namespace == "sluice-system" && role.Name == "sluice-shadow-namespaces" {
			records = role
		}
	}
	if records == nil {
		t.Fatal("no Role sluice-shadow-namespaces in the release's namespace")
	}
	if len(records.Rules) != 1 || !slices.Equal(records.Rules[0].Resources, []string{"configmaps"}) ||
		!slices.Equal(records.Rules[0].Verbs, []string{"get", "create", "update"}) {
		t.Errorf("records Role rules %+v; want configmaps get, create, update", records.Rules)
	}
	if got := renderedConfig(t, r).Network.TrustedShadowNamespaces; !slices.Equal(got, []string{"team-a-shadow"}) {
		t.Errorf("TrustedShadowNamespaces %q; want [team-a-shadow]", got)
	}
	for _, role := range render(t, "tenant").roles {
		if strings.HasSuffix(role.Name, "-shadow-namespaces") {
			t.Errorf("confined node: Role %s/%s; want none", role.Namespace, role.Name)
		}
	}
}
