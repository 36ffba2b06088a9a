package shadow

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/hostname"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Spec is what shadows are made of: the site's login node and account, the
// names of the credentials, the tunnel image and where the shadows live.
type Spec struct {
	// NodeName is the virtual node's name (label sluice.io/node).
	NodeName string
	// LoginHost and LoginPort are the login node's sshd; User is the site
	// account.
	LoginHost string
	LoginPort int
	User      string
	// KeySecret is the Secret holding the private key (key ssh-privatekey);
	// LoginHostKeys and NodeHostKeys the ConfigMaps holding the known_hosts
	// of the login node and of the compute nodes (key known_hosts). The
	// shadows read them in their own namespace.
	KeySecret     string
	LoginHostKeys string
	NodeHostKeys  string
	// KeySecretCertificate says KeySecret also holds the key's OpenSSH user
	// certificate, key ssh-certificate; the tunnels offer it with the key
	// and read it again at each connection (Network.SSH.KeySecretCertificate).
	KeySecretCertificate bool
	// ForwardTarget is "node" or "login" (Network.SSH.ForwardTarget).
	ForwardTarget string
	// TunnelImage runs the tunnel containers.
	TunnelImage string
	// SocketDirRoot is the node-local directory of the per-pod socket
	// directories. Needed by shadows with a reverse tunnel.
	SocketDirRoot string
	// ReverseSshd is where the reverse tunnel asks for its forwards, "node"
	// or "userspace" (Network.SSH.Reverse.Sshd); empty is node.
	ReverseSshd string
	// ReverseNodeExec is how the reverse tunnel reaches the node, "ssh" or
	// "srun" (Network.SSH.Reverse.NodeExec); empty is ssh.
	ReverseNodeExec string
	// TenantNamespace confines the node: every shadow lives there, and the
	// Manager touches no other namespace.
	TenantNamespace string
	// TrustedNamespaces are existing shadow namespaces that sluice did not
	// create and may use all the same (Network.TrustedShadowNamespaces):
	// an operator vouches for who may act in them (trust.go).
	TrustedNamespaces []string
	// ReplicateCredentials copies KeySecret (KeytabSecret with Kerberos),
	// LoginHostKeys and NodeHostKeys from CredentialsNamespace into each shadow namespace.
	ReplicateCredentials bool
	// CredentialsNamespace is the virtual kubelet's own namespace: it holds
	// the original credentials and the records of the shadow namespaces
	// sluice created (trust.go). Needed with ReplicateCredentials, and on a
	// node not confined to TenantNamespace.
	CredentialsNamespace string
	// Kerberos, if its Principal is set, logs the tunnels in with a keytab
	// instead of KeySecret, which is then not needed (kerberos.go).
	Kerberos Kerberos
	// Bastion, if its Host is set, is before the login node (access.go).
	Bastion Bastion
	// ReconnectSpread and ReconnectWindowMax spread the tunnels'
	// reconnections (Network.SSH.Pacing.ShadowSpread, ShadowWindowMax):
	// none if ReconnectSpread is zero; the tunnel's default window if
	// ReconnectWindowMax is.
	ReconnectSpread, ReconnectWindowMax time.Duration
	// KeyFile, on a node confined to TenantNamespace, is the key file the
	// virtual kubelet reads (mounted from a Secret of its own namespace):
	// KeySecret is written in the tenant namespace from it (and from
	// CertificateFile with KeySecretCertificate), instead of being made
	// there by the operator. If empty, KeySecret must exist there.
	KeyFile         string
	CertificateFile string
	// GatewayAddress, if set, is the gateway's HOST:PORT
	// (Network.Gateway.Address): the tunnels go through it, proving the
	// shadow with its pod-bound ServiceAccount token (GatewayAudience),
	// and nothing of the site's is copied into or written in a shadow
	// namespace. GatewayHostKeys is then the ConfigMap of the gateway's
	// host keys (key known_hosts) the shadows read in their namespace,
	// copied there with ReplicateCredentials.
	GatewayAddress  string
	GatewayHostKeys string
	// PullSecrets, NodeSelector and Tolerations go into every shadow pod
	// (Network.ShadowImagePullSecrets, ShadowNodeSelector,
	// ShadowTolerations): the site's registry and the nodes shadows run on.
	PullSecrets  []corev1.LocalObjectReference
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// SpecFrom takes a Spec from the virtual kubelet's configuration (defaults
// filled) and the namespace its credentials live in.
func SpecFrom(c *config.Config, credentialsNamespace string) Spec {
	h := c.Network.SSH
	s := Spec{
		NodeName:             c.NodeName,
		LoginHost:            h.LoginHost,
		LoginPort:            h.Port,
		User:                 h.User,
		KeySecret:            h.KeySecret,
		KeySecretCertificate: h.KeySecretCertificate,
		LoginHostKeys:        h.LoginHostKeys,
		NodeHostKeys:         h.NodeHostKeys,
		ForwardTarget:        h.ForwardTarget,
		TunnelImage:          h.TunnelImage,
		SocketDirRoot:        c.Site.SocketDirRoot,
		ReverseSshd:          h.Reverse.Sshd,
		ReverseNodeExec:      h.Reverse.NodeExec,
		TenantNamespace:      c.Network.TenantNamespace,
		TrustedNamespaces:    c.Network.TrustedShadowNamespaces,
		ReplicateCredentials: h.ReplicateCredentials,
		CredentialsNamespace: credentialsNamespace,
		Bastion: Bastion{Host: h.Bastion.Host, Port: h.Bastion.Port, User: h.Bastion.User,
			HostKeys: h.Bastion.HostKeys, KeySecret: h.Bastion.KeySecret},
		ReconnectSpread:    h.Pacing.ShadowSpread,
		ReconnectWindowMax: h.Pacing.ShadowWindowMax,
		GatewayAddress:     c.Network.Gateway.Address,
		GatewayHostKeys:    c.Network.Gateway.HostKeys,
	}
	s.PullSecrets, s.NodeSelector, s.Tolerations = placement(c.Network)
	if h.Auth == "kerberos" {
		s.KeySecret = ""
		s.Kerberos = Kerberos{Principal: h.Principal, KeytabSecret: h.KeytabSecret, Realm: h.Realm, KDCs: h.KDCs}
	}
	return s
}

// Validate checks s, naming each field at fault.
func (s Spec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("shadow spec: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	label := func(field, v string, required bool) {
		if v == "" && !required {
			return
		}
		if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			bad(field, "%q: %s", v, strings.Join(msgs, "; "))
		}
	}
	subdomain := func(field, v string) {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			bad(field, "%q: %s", v, strings.Join(msgs, "; "))
		}
	}
	if msgs := validation.IsValidLabelValue(s.NodeName); s.NodeName == "" || len(msgs) > 0 {
		bad("NodeName", "%q is not a label value", s.NodeName)
	}
	if err := hostname.CheckHost(s.LoginHost); err != nil {
		bad("LoginHost", "%v", err)
	}
	if s.LoginPort < 1 || s.LoginPort > 65535 {
		bad("LoginPort", "must be 1-65535, got %d", s.LoginPort)
	}
	if s.User == "" || strings.ContainsAny(s.User, " \t\n=\"'$`\\") {
		bad("User", "%q is not a user name", s.User)
	}
	if !s.gatewayOn() {
		// Through the gateway a shadow names none of the site's
		// credentials: they need not exist.
		s.validateLogin(bad)
		subdomain("LoginHostKeys", s.LoginHostKeys)
		subdomain("NodeHostKeys", s.NodeHostKeys)
	}
	if s.ForwardTarget != "node" && s.ForwardTarget != "login" {
		bad("ForwardTarget", "must be node or login, got %q", s.ForwardTarget)
	}
	if s.ReverseSshd != "" && s.ReverseSshd != "node" && s.ReverseSshd != "userspace" {
		bad("ReverseSshd", "must be node or userspace, got %q", s.ReverseSshd)
	}
	if s.ReverseNodeExec != "" && s.ReverseNodeExec != "ssh" && s.ReverseNodeExec != "srun" {
		bad("ReverseNodeExec", "must be ssh or srun, got %q", s.ReverseNodeExec)
	}
	if strings.TrimSpace(s.TunnelImage) != s.TunnelImage || s.TunnelImage == "" {
		bad("TunnelImage", "%q is not an image", s.TunnelImage)
	}
	if s.SocketDirRoot != "" && (!path.IsAbs(s.SocketDirRoot) || path.Clean(s.SocketDirRoot) != s.SocketDirRoot ||
		strings.ContainsAny(s.SocketDirRoot, " \t\n=")) {
		bad("SocketDirRoot", "%q is not a clean absolute path", s.SocketDirRoot)
	}
	s.validateAccess(bad)
	s.validateGateway(bad)
	label("TenantNamespace", s.TenantNamespace, false)
	for _, ns := range s.TrustedNamespaces {
		label("TrustedNamespaces", ns, true)
	}
	if s.TenantNamespace == "" {
		// Where the records of the shadow namespaces are kept.
		label("CredentialsNamespace", s.CredentialsNamespace, true)
	} else if len(s.TrustedNamespaces) > 0 {
		bad("TrustedNamespaces", "a node confined to namespace %s has no other shadow namespace to trust", s.TenantNamespace)
	}
	if s.KeyFile != "" && s.TenantNamespace == "" {
		bad("KeyFile", "the key Secret is published from a file on a node confined to a tenant namespace only")
	}
	if s.ReplicateCredentials {
		if s.TenantNamespace != "" {
			label("CredentialsNamespace", s.CredentialsNamespace, true)
		}
		// Copying from another namespace needs rights there: a confined
		// node has rights in its tenant namespace only.
		if s.TenantNamespace != "" && s.CredentialsNamespace != s.TenantNamespace {
			bad("ReplicateCredentials", "a node confined to namespace %s cannot copy credentials from namespace %s; create them in %s",
				s.TenantNamespace, s.CredentialsNamespace, s.TenantNamespace)
		}
	}
	return errors.Join(errs...)
}

// loginAddr is the login node's host:port.
func (s Spec) loginAddr() string {
	return net.JoinHostPort(s.LoginHost, strconv.Itoa(s.LoginPort))
}
