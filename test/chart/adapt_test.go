package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestSiteAdaptations: the values a site sets to fit sluice-vk's pod to its
// cluster (a private registry, a pinned image, its own flags, variables,
// volumes, labels and priority) reach the pod, after the chart's own.
func TestSiteAdaptations(t *testing.T) {
	r := render(t, "default",
		"--set", "image.digest="+digest,
		"--set-json", `imagePullSecrets=[{"name":"regcred"}]`,
		"--set-json", `extraArgs=["--log-level=debug"]`,
		"--set-json", `extraEnv=[{"name":"SSL_CERT_DIR","value":"/etc/site-ca"}]`,
		"--set-json", `extraVolumes=[{"name":"site-ca","configMap":{"name":"site-ca"}}]`,
		"--set-json", `extraVolumeMounts=[{"name":"site-ca","mountPath":"/etc/site-ca","readOnly":true}]`,
		"--set", "podLabels.team=hpc",
		"--set", "priorityClassName=system-cluster-critical",
	)
	if len(r.deployments) != 1 {
		t.Fatalf("%d Deployments; want 1", len(r.deployments))
	}
	pod := r.deployments[0].Spec.Template
	c := pod.Spec.Containers[0]
	if want := "ghcr.io/sluice-hpc/sluice-vk@" + digest; c.Image != want {
		t.Errorf("image %s; want %s", c.Image, want)
	}
	if want := []corev1.LocalObjectReference{{Name: "regcred"}}; !slices.Equal(pod.Spec.ImagePullSecrets, want) {
		t.Errorf("imagePullSecrets %v; want %v", pod.Spec.ImagePullSecrets, want)
	}
	if i := slices.Index(c.Args, "--log-level=debug"); i != len(c.Args)-1 || !slices.Contains(c.Args, "--log-level=info") {
		t.Errorf("args %q; want the chart's, then --log-level=debug last (the last one given wins)", c.Args)
	}
	if !slices.Contains(c.Env, corev1.EnvVar{Name: "SSL_CERT_DIR", Value: "/etc/site-ca"}) || c.Env[0].Name != "POD_IP" {
		t.Errorf("env %v; want POD_IP and SSL_CERT_DIR", c.Env)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "site-ca" && v.ConfigMap != nil && v.ConfigMap.Name == "site-ca"
	}) || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "site-ca" && m.MountPath == "/etc/site-ca" && m.ReadOnly
	}) {
		t.Errorf("volumes %v, mounts %v; want the site-ca ConfigMap at /etc/site-ca", pod.Spec.Volumes, c.VolumeMounts)
	}
	if pod.Labels["team"] != "hpc" || pod.Labels["app.kubernetes.io/name"] != "sluice" {
		t.Errorf("pod labels %v; want team=hpc beside the selector's", pod.Labels)
	}
	if pod.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.Spec.PriorityClassName)
	}
	// the uninstall Job runs the same image from the same registry
	job, _ := uninstallHook(t, r)
	if js := job.Spec.Template.Spec; js.Containers[0].Image != c.Image || !slices.Equal(js.ImagePullSecrets, pod.Spec.ImagePullSecrets) {
		t.Errorf("uninstall Job image %s, pull secrets %v; want sluice-vk's", js.Containers[0].Image, js.ImagePullSecrets)
	}
}

// TestSiteAdaptationsDefault: left at their defaults, the values add nothing
// to the pod (the golden renderings hold the rest).
func TestSiteAdaptationsDefault(t *testing.T) {
	pod := render(t, "default").deployments[0].Spec.Template
	c := pod.Spec.Containers[0]
	if pod.Spec.ImagePullSecrets != nil || pod.Spec.PriorityClassName != "" || len(pod.Labels) != 2 ||
		len(c.Env) != 2 || strings.Contains(c.Image, "@") {
		t.Errorf("default pod has site additions: %+v", pod)
	}
}

// TestPodLabelsKeepSelector: a pod label that would replace a selector label
// would orphan the pods from their Deployment; the chart refuses it.
func TestPodLabelsKeepSelector(t *testing.T) {
	_, err := template(t, "-f", values("default"), "--set", "podLabels.app\\.kubernetes\\.io/name=other")
	if err == nil || !strings.Contains(err.Error(), "selector label") {
		t.Errorf("got %v; want a refusal naming the selector label", err)
	}
}

// TestDisruptionBudget: with replicas standing by, a drain may evict all but
// one; with a single replica there is no budget (it would block every drain).
func TestDisruptionBudget(t *testing.T) {
	if r := render(t, "default"); len(r.pdbs) != 0 {
		t.Errorf("one replica: %d PodDisruptionBudgets; want none", len(r.pdbs))
	}
	r := render(t, "ha")
	if len(r.pdbs) != 1 {
		t.Fatalf("ha: %d PodDisruptionBudgets; want 1", len(r.pdbs))
	}
	pdb, d := r.pdbs[0], r.deployments[0]
	if want := intstr.FromInt32(1); pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != want {
		t.Errorf("minAvailable %v; want 1", pdb.Spec.MinAvailable)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if pdb.Spec.Selector.MatchLabels[k] != v {
			t.Errorf("budget selector %v does not select the Deployment's pods %v", pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels)
		}
	}
}

// TestShadowPlacementValues: the shadows' pull Secrets, node selector and
// tolerations set in values reach sluice-vk's configuration as it reads it,
// and sluice-vk refuses a toleration the schema lets through.
func TestShadowPlacementValues(t *testing.T) {
	r := render(t, "default",
		"--set-json", `config.Network.ShadowImagePullSecrets=["regcred"]`,
		"--set-json", `config.Network.ShadowNodeSelector={"node-role.example.org/shadows":"true"}`,
		"--set-json", `config.Network.ShadowTolerations=[{"Key":"dedicated","Value":"shadows","Effect":"NoSchedule"}]`,
	)
	data := r.configMap(t, "sluice-system", "sluice-config").Data["config.yaml"]
	cfg, err := config.Parse([]byte(data), func(c *config.Config) { c.Node.InternalIP = "10.88.0.7" })
	if err != nil {
		t.Fatalf("sluice-vk refuses the rendered configuration: %v\n%s", err, data)
	}
	n := cfg.Network
	if !slices.Equal(n.ShadowImagePullSecrets, []string{"regcred"}) || n.ShadowNodeSelector["node-role.example.org/shadows"] != "true" ||
		len(n.ShadowTolerations) != 1 || n.ShadowTolerations[0] != (config.ShadowToleration{Key: "dedicated", Value: "shadows", Effect: "NoSchedule"}) {
		t.Errorf("configuration %q %v %+v", n.ShadowImagePullSecrets, n.ShadowNodeSelector, n.ShadowTolerations)
	}

	r = render(t, "default", "--set-json", `config.Network.ShadowTolerations=[{"Operator":"Exists","Value":"x"}]`)
	data = r.configMap(t, "sluice-system", "sluice-config").Data["config.yaml"]
	if _, err := config.Parse([]byte(data), func(c *config.Config) { c.Node.InternalIP = "10.88.0.7" }); err == nil || !strings.Contains(err.Error(), "Network.ShadowTolerations") {
		t.Errorf("got %v; want sluice-vk to refuse the toleration", err)
	}
}

// TestShadowsPullWithChartSecrets: with shadows on, imagePullSecrets names
// the shadows' pull Secrets too, unless the configuration names its own
// (an empty list: none).
func TestShadowsPullWithChartSecrets(t *testing.T) {
	pulls := func(args ...string) []string {
		t.Helper()
		r := render(t, "default", append([]string{"--set-json", `imagePullSecrets=[{"name":"regcred"}]`}, args...)...)
		data := r.configMap(t, "sluice-system", "sluice-config").Data["config.yaml"]
		cfg, err := config.Parse([]byte(data), func(c *config.Config) { c.Node.InternalIP = "10.88.0.7" })
		if err != nil {
			t.Fatalf("sluice-vk refuses the rendered configuration: %v\n%s", err, data)
		}
		return cfg.Network.ShadowImagePullSecrets
	}
	tunnel := []string{"--set", "config.Network.EnableTunnel=true", "--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAA"}
	if got := pulls(tunnel...); !slices.Equal(got, []string{"regcred"}) {
		t.Errorf("shadows on: ShadowImagePullSecrets %q; want [regcred]", got)
	}
	if got := pulls(append(tunnel, "--set-json", `config.Network.ShadowImagePullSecrets=[]`)...); len(got) != 0 {
		t.Errorf("configuration's empty list: ShadowImagePullSecrets %q; want none", got)
	}
	if got := pulls(); len(got) != 0 {
		t.Errorf("no shadows: ShadowImagePullSecrets %q; want none", got)
	}
}

// TestTunnelImageFromRegistry: with sluice-vk's image from another
// registry, the shadows' tunnel image comes from beside it with sluice-vk's
// tag, unless the configuration names one; from ghcr.io, sluice-vk's own
// default stands.
func TestTunnelImageFromRegistry(t *testing.T) {
	image := func(args ...string) string {
		t.Helper()
		tunnel := []string{"--set", "config.Network.EnableTunnel=true", "--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAA"}
		r := render(t, "default", append(tunnel, args...)...)
		data := r.configMap(t, "sluice-system", "sluice-config").Data["config.yaml"]
		cfg, err := config.Parse([]byte(data), func(c *config.Config) { c.Node.InternalIP = "10.88.0.7" })
		if err != nil {
			t.Fatalf("sluice-vk refuses the rendered configuration: %v\n%s", err, data)
		}
		return cfg.Network.SSH.TunnelImage
	}
	if got := image("--set", "image.repository=registry.example.org:5443/hpc/sluice-vk", "--set", "image.tag=v1.2.3"); got != "registry.example.org:5443/hpc/sluice-tunnel:v1.2.3" {
		t.Errorf("sluice-vk from a registry: TunnelImage %q; want registry.example.org:5443/hpc/sluice-tunnel:v1.2.3", got)
	}
	if got := image("--set", "image.repository=registry.example.org/hpc/sluice-vk",
		"--set", "config.Network.SSH.TunnelImage=mirror.example.org/tunnel:v9"); got != "mirror.example.org/tunnel:v9" {
		t.Errorf("a TunnelImage of the configuration: %q; want it kept", got)
	}
	if got := image(); got != config.DefaultTunnelImage() {
		t.Errorf("sluice-vk from ghcr.io: TunnelImage %q; want sluice-vk's default %s", got, config.DefaultTunnelImage())
	}
	// the gateway, of the same image as the shadows, from the same place
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "image.repository=registry.example.org:5443/hpc/sluice-vk", "--set", "image.tag=v1.2.3"}, "registry.example.org:5443/hpc/sluice-tunnel:v1.2.3"},
		{[]string{"--set", "image.repository=registry.example.org/hpc/sluice-vk", "--set", "gateway.image.repository=mirror.example.org/tunnel"}, "mirror.example.org/tunnel:v0.1.0"},
		{nil, "ghcr.io/sluice-hpc/sluice-tunnel:v0.1.0"},
	} {
		gw, _ := gatewayArgs(t, render(t, "default", append(slices.Clone(tunnelOn), c.args...)...))
		if gw.Image != c.want {
			t.Errorf("with %q: gateway image %q; want %s", c.args, gw.Image, c.want)
		}
	}
}
