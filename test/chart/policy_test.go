package chart

import (
	"maps"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestNetworkPolicy: off by default; with networkPolicy.enabled, the
// kubelet API port of sluice-vk's pods is open only to
// networkPolicy.kubeletAPIFrom, the metrics port to metricsFrom, and no
// other port; without kubeletAPIFrom the chart refuses to render.
func TestNetworkPolicy(t *testing.T) {
	if r := render(t, "default"); len(r.netPolicies) != 0 {
		t.Errorf("%d NetworkPolicies by default; want none", len(r.netPolicies))
	}
	r := render(t, "default", "--set", "networkPolicy.enabled=true",
		"--set", "networkPolicy.kubeletAPIFrom[0].ipBlock.cidr=10.0.0.10/32",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring")
	if len(r.netPolicies) != 1 {
		t.Fatalf("%d NetworkPolicies; want 1", len(r.netPolicies))
	}
	np := r.netPolicies[0]
	d := r.deployments[0]
	if np.Namespace != "sluice-system" || !maps.Equal(np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("policy selects %v; want sluice-vk's pods %v", np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 2 {
		t.Fatalf("policy types %v, %d ingress rules; want Ingress, 2 rules", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	ports := map[string]int32{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	want := map[string]string{"kubelet-api": "ipBlock 10.0.0.10/32", "metrics": "namespaces name=monitoring"}
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.Type != intstr.String || len(rule.From) != 1 {
			t.Errorf("rule %+v; want one named port from one peer", rule)
			continue
		}
		name := rule.Ports[0].Port.StrVal
		if ports[name] == 0 || *rule.Ports[0].Protocol != corev1.ProtocolTCP {
			t.Errorf("rule on port %q (%s): no such port of sluice-vk's container (%v)", name, *rule.Ports[0].Protocol, ports)
		}
		var got string
		switch from := rule.From[0]; {
		case from.IPBlock != nil:
			got = "ipBlock " + from.IPBlock.CIDR
		case from.NamespaceSelector != nil:
			got = "namespaces name=" + from.NamespaceSelector.MatchLabels["name"]
		}
		if got != want[name] {
			t.Errorf("port %s open to %q; want %q", name, got, want[name])
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Errorf("no rule for %v", want)
	}
	if ports["kubelet-api"] != 10250 {
		t.Errorf("kubelet-api is port %d; want 10250", ports["kubelet-api"])
	}

	// an ingress rule from no peer admits everyone: refused
	if _, err := template(t, "-f", values("default"), "--set", "networkPolicy.enabled=true"); err == nil || !strings.Contains(err.Error(), "kubeletAPIFrom") {
		t.Errorf("networkPolicy.enabled without kubeletAPIFrom: %v; want an error naming kubeletAPIFrom", err)
	}
	// metrics off: only the kubelet API port is open
	r = render(t, "default", "--set", "networkPolicy.enabled=true", "--set", "metrics.enabled=false",
		"--set", "networkPolicy.kubeletAPIFrom[0].ipBlock.cidr=10.0.0.10/32")
	if in := r.netPolicies[0].Spec.Ingress; len(in) != 1 || in[0].Ports[0].Port.StrVal != "kubelet-api" {
		t.Errorf("ingress %+v with metrics off; want the kubelet API port only", in)
	}
}

// TestAdmissionPolicy: off by default; with admissionPolicy.enabled, two
// policies (pods, tokens), each bound with Deny and matching sluice-vk's
// service account only. What they refuse is tested on the rig's API server
// (test/e2e TestAdmissionPolicyConfinesServiceAccount).
func TestAdmissionPolicy(t *testing.T) {
	if r := render(t, "default"); len(r.vaps)+len(r.vapBindings) != 0 {
		t.Errorf("admission policies by default; want none")
	}
	r := render(t, "default", "--set", "admissionPolicy.enabled=true")
	if len(r.vaps) != 2 || len(r.vapBindings) != 2 {
		t.Fatalf("%d policies, %d bindings; want 2 and 2", len(r.vaps), len(r.vapBindings))
	}
	for i, p := range r.vaps {
		b := r.vapBindings[i]
		if b.Spec.PolicyName != p.Name || !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
			t.Errorf("binding %s: policy %s, actions %v; want %s, Deny", b.Name, b.Spec.PolicyName, b.Spec.ValidationActions, p.Name)
		}
		if mc := p.Spec.MatchConditions; len(mc) != 1 || mc[0].Expression != "request.userInfo.username == 'system:serviceaccount:sluice-system:sluice'" {
			t.Errorf("policy %s match conditions %+v; want sluice-vk's service account only", p.Name, mc)
		}
	}
}

// TestContainerPortsFollowListen: the Deployment's named ports, which the
// NetworkPolicy and the metrics Service target, are the ports sluice-vk
// listens on when config.Node.KubeletAPI.Listen or config.Node.MetricsListen
// set them: a port named after the default would leave the kubelet API
// closed to the control plane and the Service scraping nothing. A port 0
// (a free one, picked at start) cannot be named: the chart refuses it where
// a NetworkPolicy or the metrics Service would target it.
func TestContainerPortsFollowListen(t *testing.T) {
	np := []string{"--set", "networkPolicy.enabled=true", "--set", "networkPolicy.kubeletAPIFrom[0].ipBlock.cidr=10.0.0.10/32"}
	r := render(t, "default", append(np, "--set", "config.Node.KubeletAPI.Listen=0.0.0.0:10255",
		"--set", "config.Node.MetricsListen=[::]:9999")...)
	if got := containerPorts(r); got["kubelet-api"] != 10255 || got["metrics"] != 9999 {
		t.Errorf("container ports %v; want kubelet-api 10255 and metrics 9999, where sluice-vk listens", got)
	}
	// a free port without a NetworkPolicy: served, not named
	r = render(t, "default", "--set", "config.Node.KubeletAPI.Listen=0.0.0.0:0")
	if got := containerPorts(r); len(got) != 2 || got["metrics"] != 9464 || got["health"] != 10248 {
		t.Errorf("container ports %v with the kubelet API on a free port; want metrics 9464 and health 10248 only", got)
	}
	for _, tc := range []struct {
		key, value string
		args       []string
	}{
		{"Node.KubeletAPI.Listen", "0.0.0.0:0", np},
		{"Node.MetricsListen", ":0", nil},
		{"Node.MetricsListen", "nonsense", nil},
		{"Node.KubeletAPI.Listen", "10.0.0.1", nil},
	} {
		args := append([]string{"-f", values("default"), "--set", "config." + tc.key + "=" + tc.value}, tc.args...)
		if _, err := template(t, args...); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s=%s: %v; want an error naming %s", tc.key, tc.value, err, tc.key)
		}
	}
}

// containerPorts are the named ports of sluice-vk's container.
func containerPorts(r rendered) map[string]int32 {
	ports := map[string]int32{}
	for _, p := range r.deployments[0].Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	return ports
}
