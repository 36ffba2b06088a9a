package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/version"
)

func TestLoadExample(t *testing.T) {
	c, err := Load("testdata/site.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.NodeName != "hpc-a" || c.Site.DataRoot != "/scratch/alice/.sluice" {
		t.Errorf("got NodeName %q DataRoot %q; want hpc-a, /scratch/alice/.sluice", c.NodeName, c.Site.DataRoot)
	}
	if !c.Network.SSH.Reverse.Enabled || c.Network.SSH.Port != 22 {
		t.Errorf("got Reverse.Enabled %v Port %d; want true, 22", c.Network.SSH.Reverse.Enabled, c.Network.SSH.Port)
	}
	if c.Site.PollInterval != 5*time.Second {
		t.Errorf("got PollInterval %s; want the 5s default", c.Site.PollInterval)
	}
}

const minimal = `
NodeName: hpc-a
Site:
  DataRoot: /scratch/alice/.sluice
  ContainerRuntime: charliecloud
Network:
  SSH:
    LoginHost: 10.0.0.2
    User: alice
    KeyFile: /k
    KnownHostsFile: /kh
`

func TestDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	h := c.Network.SSH
	got := []string{string(c.Site.Access), c.Network.ShadowMode, h.Auth, h.ForwardTarget, h.Reverse.Sshd, h.Reverse.NodeExec}
	want := []string{"ssh", "ssh", "publickey", "node", "node", "ssh"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got defaults %v; want %v", got, want)
	}
	// The image of this binary's version (under go test, v0.0.0-dev), never :latest.
	if want := "ghcr.io/sluice-hpc/sluice-tunnel:" + version.Tag(); h.TunnelImage != want || strings.HasSuffix(want, ":latest") {
		t.Errorf("got TunnelImage %q; want %s", h.TunnelImage, want)
	}
	if !imageRef.MatchString(DefaultTunnelImage()) {
		t.Errorf("DefaultTunnelImage() = %q is not an image reference", DefaultTunnelImage())
	}
}

func TestCertificateDefaults(t *testing.T) {
	c, err := Parse([]byte(strings.Replace(minimal, "    KeyFile: /k\n", "    KeyFile: /k\n    CertificateFile: /k-cert.pub\n", 1)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if h := c.Network.SSH; h.CertificateFile != "/k-cert.pub" || h.CertificateWarnBefore != 2*time.Hour {
		t.Errorf("got CertificateFile %q CertificateWarnBefore %s; want /k-cert.pub, 2h", h.CertificateFile, h.CertificateWarnBefore)
	}
}

func TestTunnelImage(t *testing.T) {
	tests := []struct {
		image string
		ok    bool
	}{
		{"ghcr.io/sluice-hpc/sluice-tunnel:v1.2.3", true},
		{"sluice-tunnel", true},
		{"localhost:5000/sluice/tunnel:dev", true},
		{"registry.example.org/a/b/c@sha256:" + strings.Repeat("ab", 32), true},
		{"ghcr.io/sluice-hpc/sluice-tunnel:v1@sha256:" + strings.Repeat("0f", 32), true},
		{"Sluice/Tunnel", false},
		{"sluice tunnel", false},
		{"sluice-tunnel:", false},
		{"-sluice", false},
		{"ghcr.io/sluice-hpc/sluice-tunnel:latest\n", false},
		{"/usr/local/bin/sluice-tunnel", false},
		{"sluice-tunnel@sha256:abc", false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			src := strings.Replace(minimal, "    User: alice\n", "    User: alice\n    TunnelImage: \""+tt.image+"\"\n", 1)
			c, err := Parse([]byte(src))
			switch {
			case tt.ok && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.ok && c.Network.SSH.TunnelImage != tt.image:
				t.Errorf("got TunnelImage %q; want %q", c.Network.SSH.TunnelImage, tt.image)
			case !tt.ok && err == nil:
				t.Errorf("Parse accepted TunnelImage %q; want an error", tt.image)
			case !tt.ok && !strings.Contains(err.Error(), "Network.SSH.TunnelImage"):
				t.Errorf("got error %q; want it to name Network.SSH.TunnelImage", err)
			}
		})
	}
}

func TestRejected(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want string // the key the error must name
	}{
		{"unknown key", func(s string) string { return s + "Bogus: 1\n" }, "Bogus"},
		{"unknown nested key", func(s string) string {
			return strings.Replace(s, "  ContainerRuntime:", "  Runtime: x\n  ContainerRuntime:", 1)
		}, "Runtime"},
		{"misspelt case", func(s string) string { return strings.Replace(s, "DataRoot", "dataRoot", 1) }, "dataRoot"},
		{"bad node name", func(s string) string { return strings.Replace(s, "hpc-a", "HPC_A", 1) }, "NodeName"},
		{"relative data root", func(s string) string { return strings.Replace(s, "/scratch/alice/.sluice", "scratch", 1) }, "Site.DataRoot"},
		{"data root with space", func(s string) string { return strings.Replace(s, "/scratch/alice/.sluice", `"/scratch/a b"`, 1) }, "Site.DataRoot"},
		{"bad runtime", func(s string) string { return strings.Replace(s, "charliecloud", "docker", 1) }, "Site.ContainerRuntime"},
		{"bad access", func(s string) string { return strings.Replace(s, "Site:\n", "Site:\n  Access: telnet\n", 1) }, "Site.Access"},
		{"bad port", func(s string) string { return strings.Replace(s, "    User:", "    Port: 70000\n    User:", 1) }, "Network.SSH.Port"},
		{"port as text", func(s string) string { return strings.Replace(s, "    User:", "    Port: ssh\n    User:", 1) }, "line 9"},
		{"bad user", func(s string) string { return strings.Replace(s, "User: alice", "User: \"alice; rm -rf /\"", 1) }, "Network.SSH.User"},
		{"bad login host", func(s string) string { return strings.Replace(s, "10.0.0.2", "\"-oProxyCommand=x\"", 1) }, "Network.SSH.LoginHost"},
		{"no known hosts", func(s string) string { return strings.Replace(s, "    KnownHostsFile: /kh\n", "", 1) }, "Network.SSH.KnownHostsFile"},
		{"relative node known hosts", func(s string) string {
			return strings.Replace(s, "    KnownHostsFile: /kh\n", "    KnownHostsFile: /kh\n    NodeKnownHostsFile: nkh\n", 1)
		}, "Network.SSH.NodeKnownHostsFile"},
		{"bad forward target", func(s string) string {
			return strings.Replace(s, "    User: alice\n", "    User: alice\n    ForwardTarget: compute\n", 1)
		}, "Network.SSH.ForwardTarget"},
		{"refuse foreign without tenant", func(s string) string {
			return strings.Replace(s, "Network:\n", "Network:\n  RefuseForeignPods: true\n", 1)
		}, "Network.RefuseForeignPods"},
		{"bad sshd mode", func(s string) string {
			return strings.Replace(s, "    User: alice\n", "    User: alice\n    Reverse:\n      Sshd: inetd\n", 1)
		}, "Network.SSH.Reverse.Sshd"},
		{"relative certificate", func(s string) string {
			return strings.Replace(s, "    KeyFile: /k\n", "    KeyFile: /k\n    CertificateFile: id-cert.pub\n", 1)
		}, "Network.SSH.CertificateFile"},
		{"certificate with kerberos", func(s string) string {
			return strings.Replace(s, "    KeyFile: /k\n", "    Auth: kerberos\n    CertificateFile: /c\n", 1)
		}, "Network.SSH.CertificateFile"},
		{"negative certificate warning", func(s string) string {
			return strings.Replace(s, "    KeyFile: /k\n", "    KeyFile: /k\n    CertificateFile: /c\n    CertificateWarnBefore: -1h\n", 1)
		}, "Network.SSH.CertificateWarnBefore"},
		{"two documents", func(s string) string { return s + "---\nNodeName: b\n" }, "more than one"},
		{"empty", func(string) string { return "" }, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.edit(minimal)))
			if err == nil {
				t.Fatalf("Parse accepted it; want an error naming %s", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %q; want it to name %s", err, tt.want)
			}
		})
	}
}

func TestInsecureNeedsNoKnownHosts(t *testing.T) {
	src := strings.Replace(minimal, "    KnownHostsFile: /kh\n", "    InsecureIgnoreHostKeys: true\n", 1)
	if _, err := Parse([]byte(src)); err != nil {
		t.Fatalf("Parse: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("NodeName: [\n"))
	f.Add([]byte("Site: {Access: 5}\n"))
	f.Add([]byte(withNetwork("  ShadowNodeSelector: {a/b: c}\n  ShadowTolerations: [{Operator: Exists, Effect: NoExecute, Seconds: 5}]\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err == nil && c.Validate() != nil {
			t.Errorf("Parse accepted a configuration that Validate refuses")
		}
	})
}
