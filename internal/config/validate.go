package config

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluice-hpc/sluice/internal/sitepath"
)

var userName = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// imageRef is the grammar of a container image reference
// ([registry[:port]/]path[:tag][@digest]), as container registries read it.
var imageRef = regexp.MustCompile(`^` +
	`(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?/)?` + // registry
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` + // path
	`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?` + // tag
	`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?` + // digest
	`$`)

// Validate checks every key and reports each one at fault by its full name,
// for example "Network.SSH.Port: must be 1-65535, got 0".
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		bad("NodeName", "%s", strings.Join(msgs, "; "))
	} else if msgs := validation.IsValidLabelValue(c.NodeName); len(msgs) > 0 {
		// It is the node's kubernetes.io/hostname label and the shadows'
		// sluice.io/node label.
		bad("NodeName", "must be a label value (it labels the node and its shadows): %s", strings.Join(msgs, "; "))
	}

	s := c.Site
	oneOf(bad, "Site.Access", string(s.Access))
	// The rules the slurm package checks every job by, checked once here.
	if s.DataRoot == "" {
		bad("Site.DataRoot", "is required")
	} else if err := sitepath.Check(s.DataRoot); err != nil {
		bad("Site.DataRoot", "%v", err)
	}
	if s.SocketDirRoot != "" {
		if err := sitepath.CheckSocketRoot(s.SocketDirRoot, ""); err != nil {
			bad("Site.SocketDirRoot", "%v", err)
		}
	}
	oneOf(bad, "Site.ContainerRuntime", s.ContainerRuntime)
	if s.PollInterval < 100*time.Millisecond {
		bad("Site.PollInterval", "must be at least 100ms, got %s", s.PollInterval)
	}
	s.Plugin.validate(bad, s.ContainerRuntime)

	n := c.Network
	oneOf(bad, "Network.ShadowMode", n.ShadowMode)
	if n.TenantNamespace != "" {
		if msgs := validation.IsDNS1123Label(n.TenantNamespace); len(msgs) > 0 {
			bad("Network.TenantNamespace", "%s", strings.Join(msgs, "; "))
		}
	}
	if n.RefuseForeignPods && n.TenantNamespace == "" {
		bad("Network.RefuseForeignPods", "needs Network.TenantNamespace")
	}
	for _, ns := range n.TrustedShadowNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			bad("Network.TrustedShadowNamespaces", "%q: %s", ns, strings.Join(msgs, "; "))
		}
	}
	if len(n.TrustedShadowNamespaces) > 0 && n.TenantNamespace != "" {
		bad("Network.TrustedShadowNamespaces", "a node confined to Network.TenantNamespace makes no shadow namespace: its shadows live in %s", n.TenantNamespace)
	}
	n.validateShadowPod(bad)
	n.Gateway.validate(bad)

	h := n.SSH
	if s.Access == AccessSSH || n.EnableTunnel {
		if err := hostname.CheckHost(h.LoginHost); err != nil {
			bad("Network.SSH.LoginHost", "must be a host name or IP address: %v", err)
		}
		if !userName.MatchString(h.User) {
			bad("Network.SSH.User", "must be a user name, got %q", h.User)
		}
	}
	if h.Port < 1 || h.Port > 65535 {
		bad("Network.SSH.Port", "must be 1-65535, got %d", h.Port)
	}
	oneOf(bad, "Network.SSH.Auth", h.Auth)
	if h.Auth != "publickey" && (h.CertificateFile != "" || h.KeySecretCertificate) {
		bad("Network.SSH.CertificateFile", "a certificate needs Network.SSH.Auth publickey, got %q", h.Auth)
	}
	if h.CertificateWarnBefore < 0 {
		bad("Network.SSH.CertificateWarnBefore", "must not be negative, got %s", h.CertificateWarnBefore)
	}
	h.Kerberos.validate(bad, h.Auth, s.Access, n.shadowsLogIn(), h.Bastion)
	if s.Access == AccessSSH {
		if h.Auth == "publickey" {
			absPath(bad, "Network.SSH.KeyFile", h.KeyFile, true)
		}
		absPath(bad, "Network.SSH.CertificateFile", h.CertificateFile, false)
		if !h.InsecureIgnoreHostKeys {
			absPath(bad, "Network.SSH.KnownHostsFile", h.KnownHostsFile, true)
		}
	}
	absPath(bad, "Network.SSH.NodeKnownHostsFile", h.NodeKnownHostsFile, false)
	for key, name := range map[string]string{
		"Network.SSH.KeySecret":     h.KeySecret,
		"Network.SSH.LoginHostKeys": h.LoginHostKeys,
		"Network.SSH.NodeHostKeys":  h.NodeHostKeys,
	} {
		if name == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			bad(key, "%s", strings.Join(msgs, "; "))
		}
	}
	oneOf(bad, "Network.SSH.ForwardTarget", h.ForwardTarget)
	if !imageRef.MatchString(h.TunnelImage) || len(h.TunnelImage) > 4096 {
		bad("Network.SSH.TunnelImage", "must be an image reference such as %s, got %q", DefaultTunnelImage(), h.TunnelImage)
	}
	if h.Reverse.Enabled && s.SocketDirRoot == "" {
		// Every pod asking for a reverse tunnel would be taken, and its
		// job would fail at start for want of a socket directory.
		bad("Network.SSH.Reverse.Enabled", "needs Site.SocketDirRoot, where the pods' socket directories live")
	}
	oneOf(bad, "Network.SSH.Reverse.Sshd", h.Reverse.Sshd)
	oneOf(bad, "Network.SSH.Reverse.NodeExec", h.Reverse.NodeExec)
	c.validateAccess(bad)
	c.Node.validate(bad)
	return errors.Join(errs...)
}

type reporter func(key, format string, args ...any)

// oneOf reports got unless it is one of the values of the enum key.
func oneOf(bad reporter, key, got string) {
	if !allowed(key, got) {
		bad(key, "must be one of %s, got %q", strings.Join(enums[key], ", "), got)
	}
}

// absPath checks that p is a clean absolute path without spaces or control
// characters: it ends up in #SBATCH lines and on remote command lines.
func absPath(bad reporter, key, p string, required bool) {
	switch {
	case p == "":
		if required {
			bad(key, "is required")
		}
	case !path.IsAbs(p) || path.Clean(p) != p:
		bad(key, "must be a clean absolute path, got %q", p)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		bad(key, "must not contain spaces or control characters, got %q", p)
	}
}
