package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// clusterScoped are the kinds without a namespace that a chart could make.
// An object of another kind rendered without a namespace fails
// TestTenantsSideBySide: it must be classified here first.
var clusterScoped = []string{
	"Namespace", "Node", "ClusterRole", "ClusterRoleBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
	"PriorityClass", "CertificateSigningRequest", "CustomResourceDefinition",
	"StorageClass", "PersistentVolume", "IngressClass", "RuntimeClass",
}

// object is what of a rendered object matters to tenancy.
type object struct {
	Kind     string
	Metadata struct {
		Name      string
		Namespace string
	}
	// Rules of (Cluster)Roles, Subjects and RoleRef of bindings
	Rules []struct {
		ResourceNames []string `yaml:"resourceNames"`
	}
	Subjects []struct {
		Kind      string
		Namespace string
	}
	raw string
}

// renderTenant renders the chart as release "sluice" in namespace ns for
// the node node confined to the tenant namespace tenant, every optional
// object on.
func renderTenant(t *testing.T, ns, node, tenant string) []object {
	t.Helper()
	out, err := runHelm(t, "template", "sluice", chartDir, "--namespace", ns, "-f", values("tenant"),
		"--set", "config.NodeName="+node, "--set", "config.Network.TenantNamespace="+tenant,
		"--set", "admissionPolicy.enabled=true", "--set", "leaderElection.enabled=true",
		"--set", "replicas=2")
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		if o.Kind == "" {
			continue
		}
		o.raw = doc
		objs = append(objs, o)
	}
	return objs
}

// TestTenantsSideBySide: two releases of the same name, one per tenant in
// a namespace of its own, each with its node: no cluster-scoped object of
// one has the name of one of the other (helm would refuse the second
// install, or the second would take over the first's rights), every
// namespaced object is in the release's own namespaces, and nothing of
// release A names B's node, namespaces or service accounts.
func TestTenantsSideBySide(t *testing.T) {
	a := renderTenant(t, "sluice-a", "node-a", "team-a")
	b := renderTenant(t, "sluice-b", "node-b", "team-b")
	names := func(objs []object) map[string]object {
		m := map[string]object{}
		for _, o := range objs {
			if o.Metadata.Namespace == "" {
				if !slices.Contains(clusterScoped, o.Kind) {
					t.Fatalf("%s %s has no namespace and is not a known cluster-scoped kind (add it to clusterScoped)", o.Kind, o.Metadata.Name)
				}
				m[o.Kind+"/"+o.Metadata.Name] = o
			}
		}
		return m
	}
	ca, cb := names(a), names(b)
	if len(ca) == 0 {
		t.Fatal("no cluster-scoped object rendered; want at least the ClusterRoles")
	}
	for k := range ca {
		if _, ok := cb[k]; ok {
			t.Errorf("%s is rendered by both releases", k)
		}
	}
	for _, c := range []struct {
		objs              []object
		own               []string
		other, otherNode  string
		otherNS, otherTen string
	}{
		{a, []string{"sluice-a", "team-a", "kube-node-lease"}, "B", "node-b", "sluice-b", "team-b"},
		{b, []string{"sluice-b", "team-b", "kube-node-lease"}, "A", "node-a", "sluice-a", "team-a"},
	} {
		for _, o := range c.objs {
			id := fmt.Sprintf("%s %s/%s", o.Kind, o.Metadata.Namespace, o.Metadata.Name)
			if ns := o.Metadata.Namespace; ns != "" && !slices.Contains(c.own, ns) {
				t.Errorf("%s: in namespace %s; want one of %v", id, ns, c.own)
			}
			for _, s := range o.Subjects {
				if s.Namespace != "" && s.Namespace != c.own[0] {
					t.Errorf("%s: binds %s of namespace %s; want the release's %s only", id, s.Kind, s.Namespace, c.own[0])
				}
			}
			for _, r := range o.Rules {
				if slices.Contains(r.ResourceNames, c.otherNode) {
					t.Errorf("%s: names node %s of release %s", id, c.otherNode, c.other)
				}
			}
			for _, s := range []string{c.otherNode, c.otherNS, c.otherTen} {
				if strings.Contains(o.raw, s) {
					t.Errorf("%s: mentions %q of release %s", id, s, c.other)
				}
			}
		}
	}
}
