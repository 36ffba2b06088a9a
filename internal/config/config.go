// Package config holds the virtual kubelet's configuration (SPEC S9): its
// types, loading from YAML with unknown keys refused, defaults, and
// validation that names the key at fault.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-hpc/sluice/internal/version"
)

// Config is the virtual kubelet's configuration. The YAML keys are the field
// names, as in the interLink configuration they come from.
type Config struct {
	NodeName string  `yaml:"NodeName"`
	Site     Site    `yaml:"Site"`
	Network  Network `yaml:"Network"`
	Node     Node    `yaml:"Node"`
}

// Access says how the virtual kubelet reaches the site.
type Access string

// The access modes.
const (
	AccessSSH   Access = "ssh"   // one SSH connection to the login node
	AccessLocal Access = "local" // the virtual kubelet runs on the login node
)

// Site describes the HPC site.
type Site struct {
	Access   Access `yaml:"Access"`
	DataRoot string `yaml:"DataRoot"`
	// SocketDirRoot is a node-local directory; per-pod socket directories
	// live under it.
	SocketDirRoot    string `yaml:"SocketDirRoot"`
	ContainerRuntime string `yaml:"ContainerRuntime"`
	// PollInterval is how often the status of all jobs is read.
	// If zero, 5s.
	PollInterval time.Duration `yaml:"PollInterval"`
	// JobComment is the template of the jobs' sbatch --comment, with the
	// placeholders {namespace} and {name}; empty gives none, as squeue
	// shows comments to every user of the site. The slurm package checks
	// it (jobscript.NewSiteOptions).
	JobComment string `yaml:"JobComment"`

	// The keys below are those of interLink's Slurm plugin, with its names
	// and meaning (docs/interlink-migration.md); plugin.go documents them.
	Plugin `yaml:",inline"`
}

// Network configures the shadows and tunnels.
type Network struct {
	EnableTunnel      bool   `yaml:"EnableTunnel"`
	ShadowMode        string `yaml:"ShadowMode"`
	TenantNamespace   string `yaml:"TenantNamespace"`
	RefuseForeignPods bool   `yaml:"RefuseForeignPods"`
	// TrustedShadowNamespaces are <namespace>-shadow namespaces that exist
	// and that sluice did not create, which shadows may use all the same:
	// the operator vouches for who may act in them.
	TrustedShadowNamespaces []string `yaml:"TrustedShadowNamespaces"`
	// ShadowImagePullSecrets, ShadowNodeSelector and ShadowTolerations go
	// into every shadow pod's spec: the Secrets (in the shadow's namespace)
	// to pull the tunnel image with from a private registry, and the nodes
	// of the cluster the shadows may run on (shadowpod.go).
	ShadowImagePullSecrets []string           `yaml:"ShadowImagePullSecrets"`
	ShadowNodeSelector     map[string]string  `yaml:"ShadowNodeSelector"`
	ShadowTolerations      []ShadowToleration `yaml:"ShadowTolerations"`
	SSH                    SSH                `yaml:"SSH"`
	// Gateway, when its Address is set, carries the shadows' tunnels
	// (SPEC S14): shadows hold no site credential.
	Gateway Gateway `yaml:"Gateway"`
}

// Gateway is how shadows reach the tunnel gateway.
type Gateway struct {
	// Address is the gateway's HOST:PORT, as shadows dial it (its
	// Service). If empty, there is no gateway: each shadow logs in to the
	// site itself.
	Address string `yaml:"Address"`
	// HostKeys is the ConfigMap of the gateway's host keys (key
	// known_hosts) the shadows check it with. If empty and Address is
	// set, sluice-gateway-host-keys.
	HostKeys string `yaml:"HostKeys"`
}

// SSH configures how the site's login node, and through it the compute
// nodes, are reached.
type SSH struct {
	LoginHost string `yaml:"LoginHost"`
	// Port of the login node's sshd. If zero, 22.
	Port int    `yaml:"Port"`
	User string `yaml:"User"`
	// Auth is publickey or kerberos. If empty, publickey.
	Auth string `yaml:"Auth"`
	// Kerberos is how Auth kerberos gets its tickets (kerberos.go).
	Kerberos `yaml:",inline"`

	// KeySecret, LoginHostKeys and NodeHostKeys name the Secret and
	// ConfigMaps that shadows read the credentials from.
	KeySecret     string `yaml:"KeySecret"`
	LoginHostKeys string `yaml:"LoginHostKeys"`
	NodeHostKeys  string `yaml:"NodeHostKeys"`
	// KeySecretCertificate says that KeySecret also holds an OpenSSH user
	// certificate of the key, under the key ssh-certificate, which the
	// shadows offer with the key. Renewing it is updating the Secret: the
	// kubelet updates the mounted file and the next connection uses it.
	KeySecretCertificate bool `yaml:"KeySecretCertificate"`

	// KeyFile and KnownHostsFile are what the virtual kubelet itself uses
	// when it runs outside the cluster: the private key and the pinned
	// known_hosts of the login node.
	KeyFile        string `yaml:"KeyFile"`
	KnownHostsFile string `yaml:"KnownHostsFile"`
	// CertificateFile is an OpenSSH user certificate of KeyFile's key
	// (id_*-cert.pub), offered with it. The file is read again at each
	// connection, so a certificate renewed outside sluice is used without
	// a restart. If empty, the plain key is offered.
	CertificateFile string `yaml:"CertificateFile"`
	// CertificateWarnBefore is how long before CertificateFile's
	// certificate expires a warning is logged at each connection. If
	// zero, 2h.
	CertificateWarnBefore time.Duration `yaml:"CertificateWarnBefore"`
	// NodeKnownHostsFile pins the compute nodes' host keys for the virtual
	// kubelet itself: `kubectl port-forward` reaches a job's node through
	// the login node with them. If empty, port-forward answers an error.
	NodeKnownHostsFile string `yaml:"NodeKnownHostsFile"`
	// InsecureIgnoreHostKeys turns host key checks off. It exists for
	// throwaway test sites only and is logged loudly at start-up.
	InsecureIgnoreHostKeys bool `yaml:"InsecureIgnoreHostKeys"`

	// ForwardTarget is node or login. If empty, node.
	ForwardTarget        string  `yaml:"ForwardTarget"`
	ReplicateCredentials bool    `yaml:"ReplicateCredentials"`
	Reverse              Reverse `yaml:"Reverse"`

	// Bastion is an SSH host before the login node (access.go).
	Bastion Bastion `yaml:"Bastion"`
	// Pacing spreads out new connections to the site (access.go).
	Pacing Pacing `yaml:"Pacing"`

	// TunnelImage is the container image of the shadows' tunnel containers
	// (sluice-tunnel). If empty, DefaultTunnelImage().
	TunnelImage string `yaml:"TunnelImage"`
}

// TunnelImageRepository is the repository of the sluice-tunnel images
// `make images` builds (hack/tools/images).
const TunnelImageRepository = "ghcr.io/sluice-hpc/sluice-tunnel"

// DefaultTunnelImage returns the tunnel image shadows run when
// Network.SSH.TunnelImage is not set: the sluice-tunnel image of this
// binary's own version, TunnelImageRepository:<version.Tag()>, never
// :latest, so that a shadow's tunnel is the one built with its sluice-vk.
func DefaultTunnelImage() string {
	return TunnelImageRepository + ":" + version.Tag()
}

// Reverse configures the reverse tunnel (job → cluster).
type Reverse struct {
	Enabled bool `yaml:"Enabled"`
	// Sshd is node or userspace. If empty, node.
	Sshd string `yaml:"Sshd"`
	// NodeExec is ssh or srun. If empty, ssh.
	NodeExec   string `yaml:"NodeExec"`
	AllowSocks bool   `yaml:"AllowSocks"`
}

// Load reads the configuration file at path, fills defaults and validates it.
// Each of set, if any, changes the file's values before the defaults are
// filled (a command-line flag that overrides a key).
func Load(path string, set ...func(*Config)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(data, set...)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML, refusing unknown keys, applies set, then fills
// defaults and validates the result.
func Parse(data []byte, set ...func(*Config)) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty configuration")
		}
		return nil, fmt.Errorf("decode: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode: more than one YAML document")
	}
	for _, f := range set {
		f(&c)
	}
	c.Default()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Default fills the keys left empty with their defaults.
func (c *Config) Default() {
	if c.Site.Access == "" {
		c.Site.Access = AccessSSH
	}
	if c.Site.PollInterval == 0 {
		c.Site.PollInterval = 5 * time.Second
	}
	c.Node.Default()
	if c.Network.ShadowMode == "" {
		c.Network.ShadowMode = "ssh"
	}
	c.Network.Gateway.defaults()
	s := &c.Network.SSH
	if s.Port == 0 {
		s.Port = 22
	}
	if s.Auth == "" {
		s.Auth = "publickey"
	}
	if s.CertificateFile != "" && s.CertificateWarnBefore == 0 {
		s.CertificateWarnBefore = 2 * time.Hour
	}
	if s.ForwardTarget == "" {
		s.ForwardTarget = "node"
	}
	s.defaultAccess()
	if s.TunnelImage == "" {
		s.TunnelImage = DefaultTunnelImage()
	}
	if s.Reverse.Sshd == "" {
		s.Reverse.Sshd = "node"
	}
	if s.Reverse.NodeExec == "" {
		s.Reverse.NodeExec = "ssh"
	}
}
