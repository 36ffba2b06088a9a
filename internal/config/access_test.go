package config

import (
	"strings"
	"testing"
	"time"
)

const withBastion = minimal + `    Bastion:
      Host: bastion.example.org
      KnownHostsFile: /bastion_known_hosts
`

func TestAccessDefaults(t *testing.T) {
	c, err := Parse([]byte(withBastion))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	h := c.Network.SSH
	if h.Bastion.Port != 22 || h.Bastion.User != "" || h.Bastion.KeyFile != "" {
		t.Errorf("bastion defaults: port %d user %q key %q; want 22 and empty (the login node's user and key)", h.Bastion.Port, h.Bastion.User, h.Bastion.KeyFile)
	}
	want := Pacing{Rate: 2, Burst: 4, ShadowSpread: 200 * time.Millisecond, ShadowWindowMax: 30 * time.Second}
	if h.Pacing != want {
		t.Errorf("pacing defaults = %+v; want %+v", h.Pacing, want)
	}
	c, err = Parse([]byte(minimal))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Network.SSH.Bastion != (Bastion{}) {
		t.Errorf("no bastion configured, got %+v; want the zero Bastion", c.Network.SSH.Bastion)
	}
}

func TestAccessRefused(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{minimal + "    Bastion:\n      Port: 2222\n", "Network.SSH.Bastion.Host: is required when any other Network.SSH.Bastion key is set"},
		{minimal + "    Bastion:\n      Host: -oProxyCommand=x\n      KnownHostsFile: /b\n", "Network.SSH.Bastion.Host: must be a host name or IP address"},
		{minimal + "    Bastion:\n      Host: b.example\n", "Network.SSH.Bastion.KnownHostsFile: is required"},
		{minimal + "    Bastion:\n      Host: b.example\n      KnownHostsFile: rel/kh\n", "Network.SSH.Bastion.KnownHostsFile: must be a clean absolute path"},
		{minimal + "    Bastion:\n      Host: b.example\n      KnownHostsFile: /b\n      Port: 70000\n", "Network.SSH.Bastion.Port: must be 1-65535, got 70000"},
		{minimal + "    Bastion:\n      Host: b.example\n      KnownHostsFile: /b\n      User: Alice Smith\n", "Network.SSH.Bastion.User: must be a user name"},
		{minimal + "    Bastion:\n      Host: b.example\n      KnownHostsFile: /b\n      HostKeys: Not_A_Name\n", "Network.SSH.Bastion.HostKeys:"},
		{minimal + "    Bastion:\n      Host: b.example\n      KnownHostsFile: /b\n      Hots: typo\n", "field Hots not found"},
		{strings.Replace(minimal, "Network:\n", "Network:\n  EnableTunnel: true\n", 1) + "    KeySecret: k\n    LoginHostKeys: l\n    NodeHostKeys: n\n    Bastion:\n      Host: b.example\n      KnownHostsFile: /b\n",
			"Network.SSH.Bastion.HostKeys: is required with Network.EnableTunnel"},
		{minimal + "    Pacing:\n      Rate: -1\n", "Network.SSH.Pacing.Rate: must be 0.01-1000"},
		{minimal + "    Pacing:\n      Burst: 5000\n", "Network.SSH.Pacing.Burst: must be 1-1000, got 5000"},
		{minimal + "    Pacing:\n      ShadowSpread: 2m\n", "Network.SSH.Pacing.ShadowSpread: must be 1ms-1m, got 2m0s"},
		{minimal + "    Pacing:\n      ShadowWindowMax: 100ms\n", "Network.SSH.Pacing.ShadowWindowMax: must be 1s-1h, got 100ms"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): err = %v; want one containing %q", tc.yaml[len(minimal):], err, tc.want)
		}
	}
}

func TestAccessBastionKeyWithKerberos(t *testing.T) {
	// The bastion takes a key: with Kerberos on the login node, the
	// virtual kubelet's key for the bastion must be named.
	y := strings.Replace(withBastion, "    KeyFile: /k\n", "    Auth: kerberos\n", 1)
	_, err := Parse([]byte(y))
	if err == nil || !strings.Contains(err.Error(), "Network.SSH.Bastion.KeyFile: is required") {
		t.Errorf("Parse with Auth kerberos and no bastion key: err = %v; want Network.SSH.Bastion.KeyFile required", err)
	}
}
