package config

import (
	"strings"
	"testing"
)

// withGateway is minimal with Network.Gateway's keys (indented) added.
func withGateway(keys string) string {
	return strings.Replace(minimal, "Network:\n", "Network:\n  Gateway:\n"+keys, 1)
}

func TestGatewayDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Network.Gateway != (Gateway{}) {
		t.Errorf("no gateway by default: got %+v", c.Network.Gateway)
	}
	c, err = Parse([]byte(withGateway("    Address: sluice-gateway.sluice.svc:2222\n")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Network.Gateway.HostKeys != DefaultGatewayHostKeys {
		t.Errorf("HostKeys = %q; want %q", c.Network.Gateway.HostKeys, DefaultGatewayHostKeys)
	}
}

func TestGatewayRefused(t *testing.T) {
	for _, tc := range []struct{ keys, want string }{
		{"    Address: sluice-gateway\n", "Network.Gateway.Address: must be the gateway's HOST:PORT"},
		{"    Address: gw:0\n", "Network.Gateway.Address: must be the gateway's HOST:PORT: \"gw:0\": port must be 1-65535"},
		{"    Address: -oProxyCommand=x:22\n", "Network.Gateway.Address:"},
		{"    Address: gw:22\n    HostKeys: Not_A_Name\n", "Network.Gateway.HostKeys:"},
		{"    HostKeys: gw-keys\n", "Network.Gateway.HostKeys: needs Network.Gateway.Address"},
	} {
		_, err := Parse([]byte(withGateway(tc.keys)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(Gateway %q): err = %v; want one containing %q", tc.keys, err, tc.want)
		}
	}
}
