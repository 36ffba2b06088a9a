package chart

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestHostNetwork: hostNetwork puts sluice-vk's pod on its host's network
// (with the cluster's DNS still), and is refused on the ports the host's
// kubelet holds, naming the value to change.
func TestHostNetwork(t *testing.T) {
	r := render(t, "default", "--set", "hostNetwork=true",
		"--set", "config.Node.KubeletAPI.Listen=:10260", "--set", "health.port=10268")
	spec := r.deployments[0].Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != "ClusterFirstWithHostNet" {
		t.Errorf("got hostNetwork %v, dnsPolicy %q; want true, ClusterFirstWithHostNet", spec.HostNetwork, spec.DNSPolicy)
	}
	if spec := render(t, "default").deployments[0].Spec.Template.Spec; spec.HostNetwork || spec.DNSPolicy != "" {
		t.Errorf("by default: got hostNetwork %v, dnsPolicy %q; want the pod network", spec.HostNetwork, spec.DNSPolicy)
	}
	for _, tt := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "hostNetwork=true", "--set", "health.port=10268"}, "config.Node.KubeletAPI.Listen"},
		{[]string{"--set", "hostNetwork=true", "--set", "config.Node.KubeletAPI.Listen=:10260"}, "health.port"},
	} {
		_, err := template(t, append([]string{"-f", values("default")}, tt.set...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v; want a refusal naming %s", tt.set, err, tt.want)
		}
	}
}

// TestKubeletCSRRights: the ClusterRole grants CertificateSigningRequests
// exactly when the kubelet API's certificate comes from them (csr, the
// default unless CertFile is set), and never their approval.
func TestKubeletCSRRights(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  []string
		want bool
	}{
		{"default", nil, true},
		{"csr", []string{"--set", "config.Node.KubeletAPI.Certificate=csr"}, true},
		{"self-signed", []string{"--set", "config.Node.KubeletAPI.Certificate=self-signed"}, false},
		{"cert file", []string{"--set", "config.Node.KubeletAPI.CertFile=/etc/sluice/tls/tls.crt", "--set", "config.Node.KubeletAPI.KeyFile=/etc/sluice/tls/tls.key"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, "default", tt.set...)
			i := slices.IndexFunc(r.clusterRoles[0].Rules, func(rule rbacv1.PolicyRule) bool {
				return slices.Contains(rule.Resources, "certificatesigningrequests")
			})
			if got := i >= 0; got != tt.want {
				t.Fatalf("got a rule on certificatesigningrequests %v; want %v", got, tt.want)
			}
			for _, rule := range r.clusterRoles[0].Rules {
				if slices.Contains(rule.Resources, "certificatesigningrequests/approval") || slices.Contains(rule.Resources, "signers") {
					t.Errorf("rule %v: sluice-vk may not approve its own requests", rule)
				}
			}
		})
	}
}
