package doctor

import (
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
)

func TestNeedsRelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want bool
	}{
		{"nothing", func(*config.Config) {}, false},
		{"reverse", func(c *config.Config) { c.Network.SSH.Reverse.Enabled = true }, true},
		{"probes", func(c *config.Config) { c.Site.EnableProbes = true }, true},
		{"forward with a socket root", func(c *config.Config) {
			c.Network.EnableTunnel, c.Network.ShadowMode, c.Site.SocketDirRoot = true, "ssh", "/tmp/sluice"
		}, true},
		{"forward without a socket root", func(c *config.Config) { c.Network.EnableTunnel, c.Network.ShadowMode = true, "ssh" }, false},
		{"socket root, tunnel off", func(c *config.Config) { c.Network.ShadowMode, c.Site.SocketDirRoot = "ssh", "/tmp/sluice" }, false},
	} {
		var c config.Config
		tc.edit(&c)
		if got := needsRelay(&c); got != tc.want {
			t.Errorf("%s: got %v; want %v", tc.name, got, tc.want)
		}
	}
}
