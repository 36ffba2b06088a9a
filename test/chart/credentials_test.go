package chart

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
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

// TestKerberosKeytab: with Network.SSH.Auth kerberos, the chart puts the
// keytab (credentials.keytab, base64) in its Secret, mounts it into
// sluice-vk as KeytabFile, names it KeytabSecret for the shadows, and makes
// no key Secret; the uninstall hook deletes its copies. sluice-vk accepts
// the configuration. (Without the gateway: with it, TestGatewayAccess.)
func TestKerberosKeytab(t *testing.T) {
	keytab := []byte("\x05\x02 not a real keytab")
	r := render(t, "default", "--set", "config.Network.EnableTunnel=true", "--set", "gateway.enabled=false",
		"--set", "config.Network.SSH.Auth=kerberos", "--set", "config.Network.SSH.Principal=alice",
		"--set", "config.Network.SSH.Realm=EXAMPLE.ORG", "--set", "config.Network.SSH.KDCs={kdc.example.org}",
		"--set", "credentials.keytab="+base64.StdEncoding.EncodeToString(keytab),
		"--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAA")
	if len(r.secrets) != 1 || r.secrets[0].Name != "sluice-keytab" || !bytes.Equal(r.secrets[0].Data["keytab"], keytab) {
		t.Fatalf("Secrets %v; want only sluice-keytab holding the keytab", r.secrets)
	}
	cfg := renderedConfig(t, r)
	dir, keys := mountedAt(t, r, "sluice-keytab")
	h := cfg.Network.SSH
	if dir == "" || h.KeytabFile != dir+"/keytab" || !slices.Equal(keys, []string{"keytab"}) {
		t.Errorf("KeytabFile %q, keytab mounted at %q with %v; want the keytab in that mount", h.KeytabFile, dir, keys)
	}
	if h.KeytabSecret != "sluice-keytab" || h.KeySecret != "" || h.KeyFile != "" {
		t.Errorf("KeytabSecret %q, KeySecret %q, KeyFile %q; want the keytab's Secret and no key", h.KeytabSecret, h.KeySecret, h.KeyFile)
	}
	job, _ := uninstallHook(t, r)
	if !slices.Contains(job.Spec.Template.Spec.Containers[0].Args, "--delete-copies") {
		t.Errorf("hook args %q; want the copies (the keytab's among them) deleted", job.Spec.Template.Spec.Containers[0].Args)
	}
	if _, err := template(t, "-f", values("default"), "--set", "config.Network.SSH.Auth=kerberos"); err == nil || !strings.Contains(err.Error(), "credentials.keytab") {
		t.Errorf("kerberos without a keytab: %v; want an error naming credentials.keytab", err)
	}
}

// TestBastionHostKeys: credentials.bastionKnownHosts becomes a ConfigMap
// mounted into sluice-vk as Bastion.KnownHostsFile and named
// Bastion.HostKeys for the shadows (without the gateway: with it,
// TestGatewayAccess).
func TestBastionHostKeys(t *testing.T) {
	r := render(t, "default", "--set", "config.Network.EnableTunnel=true", "--set", "gateway.enabled=false",
		"--set", "config.Network.SSH.Bastion.Host=bastion.example.org",
		"--set-string", "credentials.bastionKnownHosts=bastion.example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHvDu7+u6LHSGVVvkSSp2nTp5z+mJVUfnxfhVRnbjXtn",
		"--set-string", "credentials.nodeKnownHosts=n1 ssh-ed25519 AAAA")
	r.configMap(t, "sluice-system", "sluice-bastion-hosts")
	b := renderedConfig(t, r).Network.SSH.Bastion
	dir, _ := mountedAt(t, r, "sluice-bastion-hosts")
	if dir == "" || b.KnownHostsFile != dir+"/known_hosts" || b.HostKeys != "sluice-bastion-hosts" || b.Host != "bastion.example.org" {
		t.Errorf("Bastion %+v, host keys mounted at %q; want the mounted file and the ConfigMap named", b, dir)
	}
}
