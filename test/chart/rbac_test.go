package chart

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	rbacv1 "k8s.io/api/rbac/v1"
)

// node is what decides which of sluice-vk's requests a rendered chart's
// node makes.
type node struct {
	tenant string // Network.TenantNamespace
	leader bool   // leader election on
	csr    bool   // the kubelet API's certificate from CSRs
}

// modal are the functions whose requests only some nodes make, with the
// condition (the source checks it before calling them).
var modal = map[string]func(node) bool{
	// Ensure makes the <namespace>-shadow namespaces only when the node
	// is not confined
	"(*github.com/sluice-hpc/sluice/internal/shadow.Manager).ensureNamespace": func(n node) bool { return n.tenant == "" },
	"(*github.com/sluice-hpc/sluice/internal/shadow.Manager).createNamespace": func(n node) bool { return n.tenant == "" },
	// and records the namespaces it makes, only then
	"github.com/sluice-hpc/sluice/internal/shadow.RecordedUID":       func(n node) bool { return n.tenant == "" },
	"(*github.com/sluice-hpc/sluice/internal/shadow.Manager).record": func(n node) bool { return n.tenant == "" },
	// RunElected only
	"github.com/sluice-hpc/sluice/internal/vk.elect": func(n node) bool { return n.leader },
	// Node.KubeletAPI.Certificate: csr only
	"(*github.com/sluice-hpc/sluice/internal/vk.csrCertificate).renew":  func(n node) bool { return n.csr },
	"(*github.com/sluice-hpc/sluice/internal/vk.csrCertificate).failed": func(n node) bool { return n.csr },
}

// hookOnly is the prefix of the functions that only `sluice-vk uninstall`
// runs, as the uninstall hook's own service account.
const hookOnly = "(github.com/sluice-hpc/sluice/internal/vk.Uninstall)."

// rbacModes are the kinds of node the chart renders, with the values that
// make them.
var rbacModes = []struct {
	name string
	args []string
}{
	{"default", []string{"-f", values("default")}},
	{"self-signed", []string{"-f", values("default"), "--set", "config.Node.KubeletAPI.Certificate=self-signed"}},
	{"tenant", []string{"-f", values("tenant")}},
	{"ha", []string{"-f", values("ha")}},
	{"no gateway", []string{"-f", values("tenant"), "--set", "gateway.enabled=false"}},
	{"kerberos", []string{"-f", values("default"), "--set", "config.Network.EnableTunnel=true", "--set", "gateway.enabled=false",
		"--set", "config.Network.SSH.Auth=kerberos", "--set", "config.Network.SSH.Principal=alice",
		"--set", "config.Network.SSH.Realm=EXAMPLE.ORG", "--set", "config.Network.SSH.KDCs={kdc.example.org}",
		"--set", "credentials.keytab=" + base64.StdEncoding.EncodeToString([]byte("keytab"))}},
	{"bastion", []string{"-f", values("default"), "--set", "config.Network.EnableTunnel=true", "--set", "gateway.enabled=false",
		"--set", "config.Network.SSH.Bastion.Host=bastion.example.org",
		"--set-string", "credentials.bastionKnownHosts=bastion.example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHvDu7+u6LHSGVVvkSSp2nTp5z+mJVUfnxfhVRnbjXtn"}},
}

// TestRBACFollowsClientCalls: for every kind of node, sluice-vk's service
// account is granted exactly what its source asks of the API server
// (clientcalls_test.go), each right where the requests go: cluster-wide
// (ClusterRole) only for cluster-scoped resources, requests across all
// namespaces, and, on a node that is not confined, the pods' and shadows'
// namespaces; in a Role of its namespace otherwise (the tenant namespace,
// kube-node-lease, the release's). A right granted and never asked for
// fails, as does one asked for and not granted.
func TestRBACFollowsClientCalls(t *testing.T) {
	uses := clientCalls(t)
	seen := map[string]bool{}
	for _, u := range uses {
		seen[u.fn] = true
	}
	for fn := range modal {
		if !seen[fn] {
			t.Errorf("%s makes no request: renamed? (update modal)", fn)
		}
	}
	for _, m := range rbacModes {
		t.Run(m.name, func(t *testing.T) {
			out, err := template(t, m.args...)
			if err != nil {
				t.Fatal(err)
			}
			r := decode(t, out)
			cfg := renderedConfig(t, r)
			n := node{tenant: cfg.Network.TenantNamespace, leader: slices.Contains(r.deployments[0].Spec.Template.Spec.Containers[0].Args, "--leader-elect"),
				csr: cfg.Node.KubeletAPI.Certificate == config.CertificateCSR}
			if len(r.clusterRoles) != 1 {
				t.Fatalf("%d ClusterRoles; want sluice-vk's", len(r.clusterRoles))
			}
			granted := map[string]map[right]bool{"": grants(t, r.clusterRoles[0].Rules)}
			for _, role := range r.roles {
				if granted[role.Namespace] != nil {
					t.Fatalf("two Roles in namespace %s", role.Namespace)
				}
				granted[role.Namespace] = grants(t, role.Rules)
			}
			needed := map[string]map[right][]use{}
			for _, u := range uses {
				if strings.HasPrefix(u.fn, hookOnly) {
					continue
				}
				if when := modal[u.fn]; when != nil && !when(n) {
					continue
				}
				where := placeOf(u.scope, n.tenant)
				if needed[where] == nil {
					needed[where] = map[right][]use{}
				}
				needed[where][u.right] = append(needed[where][u.right], u)
			}
			for _, where := range slices.Sorted(maps.Keys(needed)) {
				for _, rt := range sortedRights(needed[where]) {
					if !granted[""][rt] && !granted[where][rt] {
						u := needed[where][rt][0]
						t.Errorf("%s %s not granted (%s, asked at %s in %s)", rt, placeName(where), u.scope, u.pos, u.fn)
					}
				}
			}
			for _, where := range slices.Sorted(maps.Keys(granted)) {
				for _, rt := range sortedRights(granted[where]) {
					if len(needed[where][rt]) == 0 {
						t.Errorf("%s granted %s, never asked for there (%s)", rt, placeName(where), askedElsewhere(needed, rt))
					}
				}
			}
		})
	}
}

// placeOf is where a request of scope s goes on a node confined to tenant
// (if not empty): "" for cluster-wide, else a namespace.
func placeOf(s scope, tenant string) string {
	switch s.kind {
	case clusterWide:
		return ""
	case fixedNamespace:
		switch {
		case s.ns == credentialsNamespace && tenant != "":
			return tenant // the chart's --namespace on a confined node
		case s.ns == releaseNamespace, s.ns == credentialsNamespace:
			return "sluice-system"
		}
		return s.ns
	}
	return tenant
}

func placeName(where string) string {
	if where == "" {
		return "cluster-wide"
	}
	return "in namespace " + where
}

func askedElsewhere(needed map[string]map[right][]use, rt right) string {
	var at []string
	for where, rights := range needed {
		if us := rights[rt]; len(us) > 0 {
			at = append(at, fmt.Sprintf("asked %s at %s", placeName(where), us[0].pos))
		}
	}
	if len(at) == 0 {
		return "nowhere in the source"
	}
	slices.Sort(at)
	return strings.Join(at, "; ")
}

// grants expands rules into rights; resourceNames narrow a right but do
// not remove it.
func grants(t *testing.T, rules []rbacv1.PolicyRule) map[right]bool {
	t.Helper()
	g := map[right]bool{}
	for _, rule := range rules {
		if len(rule.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: non-resource URLs", rule)
		}
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					if group == "*" || res == "*" || v == "*" {
						t.Errorf("rule %+v: a wildcard", rule)
					}
					g[right{group, res, v}] = true
				}
			}
		}
	}
	return g
}

func sortedRights[V any](m map[right]V) []right {
	return slices.SortedFunc(maps.Keys(m), func(a, b right) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
}
