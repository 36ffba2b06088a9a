//go:build rig

package slurm

import (
	"testing"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// rigSite is one of the rig's HPC sites, named by the Slurm release it
// runs.
type rigSite struct {
	// slurm is the release, "22.05" or "24.11": sbatch --version on the
	// site says it (newRigEnv checks).
	slurm string
	rig   *testrig.Rig
}

// eachSite runs f on each of the rig's sites, as subtests named by their
// Slurm: "slurm-22.05" (Debian 12, OpenSSH 9.2) and "slurm-24.11" (Debian
// 13, OpenSSH 10.0, testrig's Site2). The two run in parallel: they share
// only the cluster side (Redis), each job runs on its own site's node, and
// most of a rig test is waiting on that site's Slurm. A test that changed
// something of its site (an sshd override) changes it for itself alone.
func eachSite(t *testing.T, f func(t *testing.T, site rigSite)) {
	t.Helper()
	rig := testrig.Load(t)
	for _, s := range []struct {
		slurm string
		rig   func(t *testing.T) *testrig.Rig
	}{
		{"22.05", func(*testing.T) *testrig.Rig { return rig }},
		{"24.11", func(t *testing.T) *testrig.Rig { return rig.Site2(t) }},
	} {
		t.Run("slurm-"+s.slurm, func(t *testing.T) {
			t.Parallel()
			f(t, rigSite{slurm: s.slurm, rig: s.rig(t)})
		})
	}
}
