package chart

import (
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// mountedAt is the path where the Deployment's sluice-vk container mounts
// the volume made from the ConfigMap or Secret named source ("" if none),
// and the keys of the volume's items.
func mountedAt(t *testing.T, r rendered, source string) (string, []string) {
	t.Helper()
	pod := r.deployments[0].Spec.Template.Spec
	for _, v := range pod.Volumes {
		var name string
		var items []corev1.KeyToPath
		switch {
		case v.ConfigMap != nil:
			name, items = v.ConfigMap.Name, v.ConfigMap.Items
		case v.Secret != nil:
			name, items = v.Secret.SecretName, v.Secret.Items
		}
		if name != source {
			continue
		}
		var keys []string
		for _, it := range items {
			keys = append(keys, it.Key)
		}
		for _, m := range pod.Containers[0].VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath, keys
			}
		}
	}
	return "", nil
}

func renderedConfig(t *testing.T, r rendered) *config.Config {
	t.Helper()
	data := r.configMap(t, "sluice-system", "sluice-config").Data["config.yaml"]
	cfg, err := config.Parse([]byte(data), func(c *config.Config) { c.Node.InternalIP = "10.88.0.7" })
	if err != nil {
		t.Fatalf("sluice-vk refuses the rendered configuration: %v\n%s", err, data)
	}
	return cfg
}

// TestNodeHostKeysReachSluiceVK: with credentials.nodeKnownHosts, sluice-vk
// itself gets the compute nodes' host keys (NodeKnownHostsFile), which
// kubectl exec and port-forward need; without, no such file is named.
func TestNodeHostKeysReachSluiceVK(t *testing.T) {
	cfg := renderedConfig(t, render(t, "default"))
	if cfg.Network.SSH.NodeKnownHostsFile != "" {
		t.Errorf("default: NodeKnownHostsFile %q; want none without credentials.nodeKnownHosts", cfg.Network.SSH.NodeKnownHostsFile)
	}
	r := render(t, "tenant")
	cfg = renderedConfig(t, r)
	dir, _ := mountedAt(t, r, "sluice-node-hosts")
	if dir == "" || cfg.Network.SSH.NodeKnownHostsFile != dir+"/known_hosts" {
		t.Errorf("tenant: NodeKnownHostsFile %q, node host keys mounted at %q; want the file in that mount", cfg.Network.SSH.NodeKnownHostsFile, dir)
	}
	r.configMap(t, "sluice-system", "sluice-node-hosts")
}

// TestCertificateReachesSluiceVKAndShadows: credentials.certificate is put
// in the chart's Secret as ssh-certificate, mounted beside the key as
// CertificateFile, and offered to the shadows (KeySecretCertificate).
func TestCertificateReachesSluiceVKAndShadows(t *testing.T) {
	const cert = "ssh-ed25519-cert-v01@openssh.com AAAAfake alice"
	r := render(t, "default", "--set-string", "credentials.certificate="+cert)
	if got := string(r.secrets[0].Data["ssh-certificate"]); got != cert {
		t.Errorf("Secret's ssh-certificate %q; want %q", got, cert)
	}
	cfg := renderedConfig(t, r)
	dir, keys := mountedAt(t, r, "sluice-ssh")
	if dir == "" || cfg.Network.SSH.CertificateFile != dir+"/ssh-certificate" || !slices.Contains(keys, "ssh-certificate") {
		t.Errorf("CertificateFile %q, key Secret mounted at %q with %v; want the certificate in that mount", cfg.Network.SSH.CertificateFile, dir, keys)
	}
	if !cfg.Network.SSH.KeySecretCertificate {
		t.Error("KeySecretCertificate false; want the shadows to use the certificate too")
	}
	r = render(t, "default")
	if _, keys := mountedAt(t, r, "sluice-ssh"); slices.Contains(keys, "ssh-certificate") || renderedConfig(t, r).Network.SSH.CertificateFile != "" {
		t.Errorf("default: certificate mounted (%v) or named without one given", keys)
	}
}
