package config

import (
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Bastion is an SSH host before the login node (a jump host): the virtual
// kubelet and the shadows reach the login node through it, the host key of
// each checked against its own pinned known_hosts. It authenticates with a
// key (the login node's, unless another is named).
type Bastion struct {
	// Host is the bastion's host name or address. If empty, there is no
	// bastion and every other key must be empty.
	Host string `yaml:"Host"`
	// Port of the bastion's sshd. If zero, 22.
	Port int `yaml:"Port"`
	// User is the account on the bastion. If empty, Network.SSH.User.
	User string `yaml:"User"`
	// KnownHostsFile pins the bastion's host key for the virtual kubelet
	// itself; required with Site.Access ssh.
	KnownHostsFile string `yaml:"KnownHostsFile"`
	// KeyFile is the virtual kubelet's key for the bastion. If empty,
	// Network.SSH.KeyFile.
	KeyFile string `yaml:"KeyFile"`
	// HostKeys names the ConfigMap (key known_hosts) pinning the bastion's
	// host key for the shadows; required when the tunnels are on.
	HostKeys string `yaml:"HostKeys"`
	// KeySecret names the Secret (key ssh-privatekey) with the shadows' key
	// for the bastion. If empty, Network.SSH.KeySecret.
	KeySecret string `yaml:"KeySecret"`
}

// Pacing spreads out new SSH connections to the site, so that a login node
// restart under many tunnels does not trip its sshd's MaxStartups or a
// site firewall that blocks bursts.
type Pacing struct {
	// Rate is how many new connections per second the virtual kubelet
	// makes to the site at most, all of its reconnections together (a token
	// bucket). If zero, 2.
	Rate float64 `yaml:"Rate"`
	// Burst is how many it may make at once before Rate applies. If zero, 4.
	Burst int `yaml:"Burst"`
	// ShadowSpread is the window each shadow's tunnel adds to the window
	// its reconnections are spread over: a tunnel that lost its connection
	// waits a random time within ShadowSpread times the number of tunnels
	// of the node before connecting again. If zero, 200ms.
	ShadowSpread time.Duration `yaml:"ShadowSpread"`
	// ShadowWindowMax is the widest that window grows. If zero, 30s.
	ShadowWindowMax time.Duration `yaml:"ShadowWindowMax"`
}

// Pacing defaults.
const (
	DefaultPacingRate      = 2
	DefaultPacingBurst     = 4
	DefaultShadowSpread    = 200 * time.Millisecond
	DefaultShadowWindowMax = 30 * time.Second
)

// defaultAccess fills the bastion's and pacing's empty keys.
func (s *SSH) defaultAccess() {
	b := &s.Bastion
	if b.Host != "" && b.Port == 0 {
		b.Port = 22
	}
	p := &s.Pacing
	if p.Rate == 0 {
		p.Rate = DefaultPacingRate
	}
	if p.Burst == 0 {
		p.Burst = DefaultPacingBurst
	}
	if p.ShadowSpread == 0 {
		p.ShadowSpread = DefaultShadowSpread
	}
	if p.ShadowWindowMax == 0 {
		p.ShadowWindowMax = DefaultShadowWindowMax
	}
}

// validateAccess checks the bastion's and pacing's keys.
func (c *Config) validateAccess(bad reporter) {
	h := c.Network.SSH
	b := h.Bastion
	const key = "Network.SSH.Bastion"
	if b.Host == "" {
		if b != (Bastion{}) {
			bad(key+".Host", "is required when any other %s key is set", key)
		}
	} else {
		if err := hostname.CheckHost(b.Host); err != nil {
			bad(key+".Host", "must be a host name or IP address: %v", err)
		}
		if b.Port < 1 || b.Port > 65535 {
			bad(key+".Port", "must be 1-65535, got %d", b.Port)
		}
		if b.User != "" && !userName.MatchString(b.User) {
			bad(key+".User", "must be a user name, got %q", b.User)
		}
		if c.Site.Access == AccessSSH {
			absPath(bad, key+".KnownHostsFile", b.KnownHostsFile, true)
			absPath(bad, key+".KeyFile", b.KeyFile, h.Auth != "publickey")
		} else {
			absPath(bad, key+".KnownHostsFile", b.KnownHostsFile, false)
			absPath(bad, key+".KeyFile", b.KeyFile, false)
		}
		if c.Network.shadowsLogIn() && b.HostKeys == "" {
			bad(key+".HostKeys", "is required with Network.EnableTunnel: the shadows pin the bastion's host key from this ConfigMap")
		}
		for k, name := range map[string]string{key + ".HostKeys": b.HostKeys, key + ".KeySecret": b.KeySecret} {
			if name == "" {
				continue
			}
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				bad(k, "%s", strings.Join(msgs, "; "))
			}
		}
	}
	p := h.Pacing
	if p.Rate < 0.01 || p.Rate > 1000 {
		bad("Network.SSH.Pacing.Rate", "must be 0.01-1000 connections per second, got %v", p.Rate)
	}
	if p.Burst < 1 || p.Burst > 1000 {
		bad("Network.SSH.Pacing.Burst", "must be 1-1000, got %d", p.Burst)
	}
	if p.ShadowSpread < time.Millisecond || p.ShadowSpread > time.Minute {
		bad("Network.SSH.Pacing.ShadowSpread", "must be 1ms-1m, got %s", p.ShadowSpread)
	}
	if p.ShadowWindowMax < time.Second || p.ShadowWindowMax > time.Hour {
		bad("Network.SSH.Pacing.ShadowWindowMax", "must be 1s-1h, got %s", p.ShadowWindowMax)
	}
}
