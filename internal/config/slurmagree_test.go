package config_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
)

const base = `
NodeName: hpc-a
Site:
  DataRoot: %q
  SocketDirRoot: %q
  ContainerRuntime: none
Network:
  SSH:
    LoginHost: 10.0.0.2
    User: alice
    KeyFile: /k
    KnownHostsFile: /kh
`

// noSite is a site no command reaches: Status with no jobs checks the
// client's configuration and runs nothing.
type noSite struct{ site.Runner }

// FuzzConfigAgreesWithSlurm: every DataRoot and SocketDirRoot the
// configuration takes at start-up is taken by the slurm package for every
// pod the API server may send, so that no pod waits for ever on a path
// that the configuration let through.
func FuzzConfigAgreesWithSlurm(f *testing.F) {
	f.Add("/scratch/alice/.sluice", "/tmp/sluice")
	f.Add("/scratch/a:b", "/tmp/"+strings.Repeat("s", 51))
	f.Add("/scratch/é", "/tmp/a%b")
	f.Add("/scratch/#x", "")
	f.Fuzz(func(t *testing.T, dataRoot, socketRoot string) {
		c, err := config.Parse(fmt.Appendf(nil, base, dataRoot, socketRoot))
		if err != nil {
			return
		}
		client := &slurm.Client{Site: noSite{}, DataRoot: c.Site.DataRoot, Runtime: jobscript.RuntimeNone}
		if _, err := client.Status(context.Background(), nil); err != nil {
			t.Fatalf("config took DataRoot %q, which slurm refuses: %v", c.Site.DataRoot, err)
		}
		for range 3 {
			var b [16]byte
			_, _ = rand.Read(b[:])
			uid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
			if err := jobscript.CheckSocketDirRoot(c.Site.SocketDirRoot, uid); err != nil {
				t.Fatalf("config took SocketDirRoot %q, which slurm refuses for pod %s: %v", c.Site.SocketDirRoot, uid, err)
			}
		}
	})
}
