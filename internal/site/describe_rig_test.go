//go:build rig

package site

import (
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestRigDescribe reads the rig's Slurm and Charliecloud versions and the
// login node's OS over SSH, as sluice-vk does at start.
func TestRigDescribe(t *testing.T) {
	rig := testrig.Load(t)
	r := newSSH(t, rigConfig(t, rig, rig.Get(t, "RIG_KNOWN_HOSTS")))
	got, err := Describe(ctxFor(t), r, "ch-run")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the rig's login node: %+v", got)
	dotted := regexp.MustCompile(`^[0-9]+(\.[0-9]+)+`)
	if !dotted.MatchString(got.Slurm) || !dotted.MatchString(got.RuntimeVersion) {
		t.Errorf("Slurm %q, Charliecloud %q; want both versions", got.Slurm, got.RuntimeVersion)
	}
	if !strings.Contains(got.OS, "Linux") || got.Kernel == "" {
		t.Errorf("OS %q, kernel %q; want the login node's", got.OS, got.Kernel)
	}
	// The rig's login node is a network namespace of this machine.
	if KubeArch(got.Machine) != runtime.GOARCH {
		t.Errorf("machine %q is %q to Kubernetes; want this machine's %s", got.Machine, KubeArch(got.Machine), runtime.GOARCH)
	}
}
