package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/relaybin"
	"github.com/sluice-hpc/sluice/internal/site"
)

// relayCheck asks the login node for its machine (uname -m) and finds the
// relay sluice-vk would place there (relaybin.Find): a FAIL when the
// node's jobs may need it (needsRelay) and none fits, a WARN otherwise (no
// pod needs it yet).
func (d *Doctor) relayCheck(ctx context.Context, r site.Runner) Check {
	res := run(ctx, r, "uname", "-m")
	c := Check{Name: "relay"}
	if res.err != nil {
		c.Status, c.Found = Warn, "uname -m on the login node: "+brief(res)
		c.Fix = "put uname (coreutils) in the PATH of the site account: sluice-vk places the relay built for the machine it names"
		return c
	}
	machine := strings.TrimSpace(string(res.out))
	dir := d.RelayDir
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			c.Status, c.Found = Warn, "the relays beside sluice-vk: "+err.Error()
			return c
		}
		dir = filepath.Dir(exe)
	}
	path, err := relaybin.Find(d.RelayBinary, dir, machine)
	if err == nil {
		c.Status, c.Found = OK, fmt.Sprintf("the site's machine is %s: sluice-vk places %s", machine, filepath.Base(path))
		return c
	}
	c.Status, c.Found = Warn, err.Error()
	if needsRelay(d.Config) {
		c.Status = Fail
	}
	if errors.Is(err, relaybin.ErrNoFit) {
		c.Fix = fmt.Sprintf("run a sluice-vk image that carries a relay for this machine (releases carry %s), or give --relay-binary a sluice-relay built with GOOS=linux GOARCH=%s",
			strings.Join(relaybin.Archs, ", "), orUnknown(site.KubeArch(machine)))
	} else {
		c.Fix = "check --relay-binary: it names the sluice-relay placed on the site"
	}
	return c
}

func orUnknown(arch string) string {
	if arch == "" {
		return "<the site's architecture>"
	}
	return arch
}

// needsRelay reports whether the jobs of c's node may run sluice-relay
// (shadow.RunsRelay, jobscript.Job.ChecksOwners): with the reverse tunnel,
// with the forward tunnel where the site has a socket directory root (its
// forward entry), and with probes (those on the node's loopback are
// checked with it).
func needsRelay(c *config.Config) bool {
	n := c.Network
	return n.SSH.Reverse.Enabled || c.Site.EnableProbes ||
		n.EnableTunnel && n.ShadowMode == "ssh" && c.Site.SocketDirRoot != ""
}
