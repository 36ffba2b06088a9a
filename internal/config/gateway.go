package config

import (
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultGatewayHostKeys is the ConfigMap of the gateway's host keys when
// Network.Gateway.HostKeys is empty.
const DefaultGatewayHostKeys = "sluice-gateway-host-keys"

func (g *Gateway) defaults() {
	if g.Address != "" && g.HostKeys == "" {
		g.HostKeys = DefaultGatewayHostKeys
	}
}

// validate checks the gateway's keys, when there is a gateway.
func (g Gateway) validate(bad func(key, format string, args ...any)) {
	if g.Address == "" {
		if g.HostKeys != "" {
			bad("Network.Gateway.HostKeys", "needs Network.Gateway.Address")
		}
		return
	}
	if err := hostname.CheckHostPort(g.Address); err != nil {
		bad("Network.Gateway.Address", "must be the gateway's HOST:PORT: %v", err)
	}
	if msgs := validation.IsDNS1123Subdomain(g.HostKeys); len(msgs) > 0 {
		bad("Network.Gateway.HostKeys", "%s", strings.Join(msgs, "; "))
	}
}

// shadowsLogIn says that the shadows log in to the site themselves: the
// tunnel is on, with no gateway. Only then must the site's credentials be
// named for them (a keytab Secret, the bastion's host keys and key).
func (n Network) shadowsLogIn() bool {
	return n.EnableTunnel && n.ShadowMode == "ssh" && n.Gateway.Address == ""
}
