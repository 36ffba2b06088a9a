package chart

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// tunnelOn are the values of a node that is not confined, with tunnels.
var tunnelOn = []string{"--set", "config.Network.EnableTunnel=true",
	"--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHvDu7+u6LHSGVVvkSSp2nTp5z+mJVUfnxfhVRnbjXtn"}

// gatewayArgs returns the rendered gateway's container and its args.
func gatewayArgs(t *testing.T, r rendered) (corev1.Container, []string) {
	t.Helper()
	if r.gateway == nil || len(r.gateway.deployments) != 1 {
		t.Fatalf("gateway: %+v; want one Deployment", r.gateway)
	}
	c := r.gateway.deployments[0].Spec.Template.Spec.Containers[0]
	return c, c.Args
}

// TestGatewayDeployed: with the tunnels on, the chart deploys the gateway
// by default: two replicas kept apart by a preferred anti-affinity, a
// disruption budget, its Service on 2222, probes on its metrics port,
// resources; sluice-vk's configuration names the Service as
// Network.Gateway.Address (as the gateway advertises it) and no site
// credential for the shadows; each Deployment selects its own pods only.
func TestGatewayDeployed(t *testing.T) {
	r := render(t, "default", tunnelOn...)
	c, args := gatewayArgs(t, r)
	d := r.gateway.deployments[0]
	if d.Namespace != "sluice-system" || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("gateway %s/%s, replicas %v; want 2 in the release's namespace", d.Namespace, d.Name, d.Spec.Replicas)
	}
	aff := d.Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("affinity %+v; want a preferred anti-affinity only", aff)
	}
	if len(r.gateway.pdbs) != 1 || r.gateway.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("gateway PDBs %+v; want one, one unavailable at a time", r.gateway.pdbs)
	}
	if len(r.gateway.services) != 1 || r.gateway.services[0].Spec.Ports[0].Port != 2222 || r.gateway.services[0].Spec.Ports[0].TargetPort.StrVal != "ssh" {
		t.Fatalf("gateway Services %+v; want one on 2222", r.gateway.services)
	}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.StrVal != "metrics" {
			t.Errorf("probe %+v; want /healthz on the metrics port", p)
		}
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v; want memory requested and limited", c.Resources)
	}
	svc := r.gateway.services[0]
	cfg := renderedConfig(t, r)
	want := svc.Name + "." + svc.Namespace + ".svc:2222"
	if gw := cfg.Network.Gateway; gw.Address != want || gw.HostKeys != "sluice-gateway-host-keys" {
		t.Errorf("Network.Gateway %+v; want Address %s and the published host keys", gw, want)
	}
	for _, a := range []string{"--advertise=" + want, "--host-key-secret=sluice-system/sluice-gateway-host-key",
		"--publish-host-keys=sluice-system/sluice-gateway-host-keys", "--credentials-namespace=sluice-system", "--node=hpc-a",
		"--key=/etc/sluice/ssh/ssh-privatekey", "--login=login.example.org:22", "--user=alice"} {
		if !slices.Contains(args, a) {
			t.Errorf("gateway args %q; want %s", args, a)
		}
	}
	if h := cfg.Network.SSH; h.KeySecret != "" || h.LoginHostKeys != "" || h.NodeHostKeys != "" {
		t.Errorf("KeySecret %q, LoginHostKeys %q, NodeHostKeys %q; want none named for the shadows", h.KeySecret, h.LoginHostKeys, h.NodeHostKeys)
	}
	// the host key's Secret and ConfigMap, empty: the gateway fills them
	if len(r.gateway.secrets) != 1 || r.gateway.secrets[0].Name != "sluice-gateway-host-key" || len(r.gateway.secrets[0].Data) != 0 ||
		len(r.gateway.configMaps) != 1 || r.gateway.configMaps[0].Namespace != "sluice-system" || len(r.gateway.configMaps[0].Data) != 0 {
		t.Errorf("gateway Secrets %+v, ConfigMaps %+v; want the host key's and the host keys', empty", r.gateway.secrets, r.gateway.configMaps)
	}
	if own := render(t, "default", append(slices.Clone(tunnelOn), "--set", "gateway.hostKeySecret=my-key")...); len(own.gateway.secrets) != 0 {
		t.Errorf("gateway.hostKeySecret: Secrets %+v; want none made", own.gateway.secrets)
	} else if _, args := gatewayArgs(t, own); !slices.Contains(args, "--host-key-secret=sluice-system/my-key") {
		t.Errorf("gateway.hostKeySecret: args %q", args)
	}
	// each Deployment's selector picks its own pods, not the other's
	vk := r.deployments[0]
	for _, pair := range [][2]map[string]string{
		{vk.Spec.Selector.MatchLabels, d.Spec.Template.Labels},
		{d.Spec.Selector.MatchLabels, vk.Spec.Template.Labels},
	} {
		if labels.SelectorFromSet(pair[0]).Matches(labels.Set(pair[1])) {
			t.Errorf("selector %v picks pods labelled %v", pair[0], pair[1])
		}
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) ||
		labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(vk.Spec.Template.Labels)) {
		t.Errorf("the gateway's Service selects %v; want the gateway's pods only", svc.Spec.Selector)
	}

	// one replica: no budget; no tunnels or gateway.enabled false: no gateway
	if one := render(t, "default", append(slices.Clone(tunnelOn), "--set", "gateway.replicas=1")...); len(one.gateway.pdbs) != 0 {
		t.Errorf("one replica: PDBs %+v; want none", one.gateway.pdbs)
	}
	if off := render(t, "default"); off.gateway != nil {
		t.Errorf("tunnels off: gateway objects %+v; want none", off.gateway)
	}
	off := render(t, "default", append(slices.Clone(tunnelOn), "--set", "gateway.enabled=false")...)
	if off.gateway != nil {
		t.Errorf("gateway.enabled false: gateway objects %+v; want none", off.gateway)
	}
	if cfg := renderedConfig(t, off); cfg.Network.Gateway.Address != "" || cfg.Network.SSH.KeySecret != "sluice-ssh" {
		t.Errorf("gateway.enabled false: Gateway %+v, KeySecret %q; want the shadows logging in with the chart's key", cfg.Network.Gateway, cfg.Network.SSH.KeySecret)
	}
	if _, args := gatewayArgs(t, render(t, "default", append(slices.Clone(tunnelOn), "--set", "config.Network.SSH.LoginHost=fd00::2", "--set", "config.Network.SSH.Port=2022")...)); !slices.Contains(args, "--login=[fd00::2]:2022") {
		t.Errorf("IPv6 login host: args %q; want --login=[fd00::2]:2022", args)
	}
	if _, err := template(t, "-f", values("default"), "--set", "config.Network.EnableTunnel=true"); err == nil || !strings.Contains(err.Error(), "credentials.nodeKnownHosts is required with gateway.enabled") {
		t.Errorf("gateway without the nodes' host keys: %v; want refused", err)
	}
}

// TestGatewayConfinedNoCredentialOutside: on a confined node with the
// gateway, nothing of the site's is rendered into the tenant namespace
// (sluice-vk is not asked to publish its key there either); the gateway
// serves that namespace only and publishes its host keys there, where
// the shadows read them.
func TestGatewayConfinedNoCredentialOutside(t *testing.T) {
	r := render(t, "tenant", "--set-string", "credentials.privateKey=not a key", "--set", "credentials.existingSecret=")
	for _, s := range r.secrets {
		if s.Namespace != "sluice-system" {
			t.Errorf("Secret %s/%s rendered outside the release's namespace", s.Namespace, s.Name)
		}
	}
	for _, c := range r.configMaps {
		if c.Namespace != "sluice-system" {
			t.Errorf("ConfigMap %s/%s rendered outside the release's namespace", c.Namespace, c.Name)
		}
	}
	// but the gateway's host keys, where the shadows read them
	if cms := r.gateway.configMaps; len(cms) != 1 || cms[0].Namespace != "team-a" || cms[0].Name != "sluice-gateway-host-keys" {
		t.Errorf("gateway ConfigMaps %+v; want its host keys in team-a", cms)
	}
	if slices.Contains(r.deployments[0].Spec.Template.Spec.Containers[0].Args, "--publish-key-secret") {
		t.Error("sluice-vk publishes the key Secret in the tenant namespace")
	}
	_, args := gatewayArgs(t, r)
	for _, a := range []string{"--tenant-namespace=team-a", "--publish-host-keys=team-a/sluice-gateway-host-keys",
		"--host-key-secret=sluice-system/sluice-gateway-host-key"} {
		if !slices.Contains(args, a) {
			t.Errorf("gateway args %q; want %s", args, a)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--credentials-namespace") }) {
		t.Errorf("gateway args %q: a credentials namespace on a confined node", args)
	}
}

// TestGatewayAccess: the gateway gets the site's access that sluice-vk
// has: the keytab with Kerberos, the bastion with its host keys; the
// shadows are named none of them.
func TestGatewayAccess(t *testing.T) {
	r := render(t, "default", append(slices.Clone(tunnelOn),
		"--set", "config.Network.SSH.Auth=kerberos", "--set", "config.Network.SSH.Principal=alice",
		"--set", "config.Network.SSH.Realm=EXAMPLE.ORG", "--set", "config.Network.SSH.KDCs={kdc.example.org,kdc2.example.org:88}",
		"--set", "credentials.keytab=a2V5dGFi")...)
	_, args := gatewayArgs(t, r)
	for _, a := range []string{"--keytab=/etc/sluice/krb5/keytab", "--principal=alice", "--realm=EXAMPLE.ORG", "--kdc=kdc.example.org,kdc2.example.org:88"} {
		if !slices.Contains(args, a) {
			t.Errorf("gateway args %q; want %s", args, a)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--key=") }) {
		t.Errorf("gateway args %q: a key with Kerberos", args)
	}
	checkSources(t, r, "sluice-keytab", "sluice-login-hosts", "sluice-node-hosts")
	if h := renderedConfig(t, r).Network.SSH; h.KeytabSecret != "" {
		t.Errorf("KeytabSecret %q; want none named for the shadows", h.KeytabSecret)
	}

	r = render(t, "default", append(slices.Clone(tunnelOn),
		"--set", "config.Network.SSH.Bastion.Host=bastion.example.org", "--set", "config.Network.SSH.Bastion.User=jump",
		"--set-string", "credentials.bastionKnownHosts=bastion.example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHvDu7+u6LHSGVVvkSSp2nTp5z+mJVUfnxfhVRnbjXtn")...)
	_, args = gatewayArgs(t, r)
	for _, a := range []string{"--key=/etc/sluice/ssh/ssh-privatekey", "--bastion=bastion.example.org:22", "--bastion-user=jump",
		"--bastion-known-hosts=/etc/sluice/bastion_known_hosts/known_hosts"} {
		if !slices.Contains(args, a) {
			t.Errorf("gateway args %q; want %s", args, a)
		}
	}
	checkSources(t, r, "sluice-bastion-hosts", "sluice-login-hosts", "sluice-node-hosts", "sluice-ssh")
	if h := renderedConfig(t, r).Network.SSH; h.Bastion.HostKeys != "" {
		t.Errorf("Bastion.HostKeys %q; want none named for the shadows", h.Bastion.HostKeys)
	}
}

// checkSources checks that the gateway mounts exactly the Secrets and
// ConfigMaps want (sorted), each where a mount uses it.
func checkSources(t *testing.T, r rendered, want ...string) {
	t.Helper()
	sources := map[string]string{}
	spec := r.gateway.deployments[0].Spec.Template.Spec
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil:
			sources[v.Name] = v.Secret.SecretName
		case v.ConfigMap != nil:
			sources[v.Name] = v.ConfigMap.Name
		}
	}
	mounted := map[string]bool{}
	for _, m := range spec.Containers[0].VolumeMounts {
		mounted[m.Name] = true
	}
	for name := range sources {
		if !mounted[name] {
			t.Errorf("volume %s is not mounted", name)
		}
	}
	if got := slices.Sorted(maps.Values(sources)); !slices.Equal(got, want) {
		t.Errorf("gateway volumes from %v; want %v", got, want)
	}
}

// TestGatewayRBACFollowsClientCalls: the gateway's service account is
// granted exactly the rights its source (cmd/sluice-tunnel, everything it
// links) asks for, and cluster-wide only what it must read across
// namespaces: with a tenant namespace, the review of tokens only. The
// Secret it keeps its host key in and the ConfigMap it publishes are the
// only ones it may read or update by name in the release's namespace.
func TestGatewayRBACFollowsClientCalls(t *testing.T) {
	// sluice-tunnel links internal/shadow for the names and the parsing of
	// what sluice-vk makes, not for its requests
	uses := clientCallsFrom(t, "./cmd/sluice-tunnel", module+"/cmd/sluice-tunnel", module+"/internal/gateway")
	seen := map[string]bool{}
	for _, u := range uses {
		seen[u.fn] = true
	}
	for _, fn := range []string{module + "/internal/shadow.RecordedUID", module + "/cmd/sluice-tunnel.ensureHostKey"} {
		if !seen[fn] {
			t.Errorf("%s makes no request the gateway reaches: renamed? (update this test)", fn)
		}
	}
	// what only a node that is not confined asks: the shadow namespaces
	// are checked against sluice-vk's records (checkNamespace returns
	// before on a confined node)
	notConfined := map[string]bool{
		"(*" + module + "/internal/gateway.GrantSource).checkNamespace": true,
		module + "/internal/shadow.RecordedUID":                         true,
	}
	for _, m := range []struct {
		name    string
		args    []string
		cluster []right
	}{
		{"cluster", append([]string{"-f", values("default")}, tunnelOn...), []right{
			{"", "configmaps", "get"}, {"", "configmaps", "list"}, {"", "configmaps", "watch"}, {"", "namespaces", "get"}, {"", "pods", "get"},
			{"apps", "deployments", "get"}, {"apps", "replicasets", "get"}, {"authentication.k8s.io", "tokenreviews", "create"}}},
		{"tenant", []string{"-f", values("tenant")}, []right{{"authentication.k8s.io", "tokenreviews", "create"}}},
	} {
		t.Run(m.name, func(t *testing.T) {
			out, err := template(t, m.args...)
			if err != nil {
				t.Fatal(err)
			}
			r := decode(t, out)
			needed := map[right]bool{}
			for _, u := range uses {
				if m.name == "cluster" || !notConfined[u.fn] {
					needed[u.right] = true
				}
			}
			if r.gateway == nil || len(r.gateway.clusterRoles) != 1 {
				t.Fatalf("gateway: %+v; want one ClusterRole", r.gateway)
			}
			cluster := grants(t, r.gateway.clusterRoles[0].Rules)
			if got := sortedRights(cluster); !slices.Equal(got, m.cluster) {
				t.Errorf("cluster-wide %v; want %v", got, m.cluster)
			}
			granted := maps.Clone(cluster)
			for _, role := range r.gateway.roles {
				for rt := range grants(t, role.Rules) {
					granted[rt] = true
				}
				for _, rule := range role.Rules {
					switch {
					case slices.Contains(rule.Verbs, "create"):
						t.Errorf("Role %s/%s creates %v; want nothing created (the chart makes the host key's objects)", role.Namespace, role.Name, rule.Resources)
					case slices.Contains(rule.Resources, "secrets") &&
						(role.Namespace != "sluice-system" || !slices.Equal(rule.ResourceNames, []string{"sluice-gateway-host-key"})):
						t.Errorf("Role %s/%s: Secrets %v; want the host key's only", role.Namespace, role.Name, rule.ResourceNames)
					case slices.Contains(rule.Verbs, "update") && rule.Resources[0] == "configmaps" && !slices.Equal(rule.ResourceNames, []string{"sluice-gateway-host-keys"}):
						t.Errorf("Role %s/%s updates ConfigMaps %v; want the host keys' only", role.Namespace, role.Name, rule.ResourceNames)
					}
				}
			}
			for _, rt := range sortedRights(needed) {
				if !granted[rt] {
					t.Errorf("%s asked for by the gateway's source, not granted", rt)
				}
			}
			for _, rt := range sortedRights(granted) {
				if !needed[rt] {
					t.Errorf("%s granted, never asked for by the gateway's source", rt)
				}
			}
		})
	}
}
