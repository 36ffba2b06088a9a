//go:build e2e

package e2e

import (
	"testing"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// The rig's HPC sites, by the Slurm release each runs: the first (Debian
// 12: Slurm 22.05, OpenSSH 9.2) and the second (Debian 13: Slurm 24.11,
// OpenSSH 10.0; testrig's Site2).
const (
	firstSite  = "22.05"
	secondSite = "24.11"
)

// rigSite is the site a test runs against.
type rigSite struct {
	// slurm is its release, firstSite or secondSite; the node annotation
	// sluice.io/sbatch-options names it with its patch level.
	slurm string
	rig   *testrig.Rig
}

// eachSite runs f against each of the rig's sites, as subtests named by
// their Slurm, "slurm-22.05" and "slurm-24.11" (-run 'TestX/slurm-24.11'
// picks one, -run '/slurm-24.11' every test of the second site), which run
// in parallel: f must share nothing with other tests on either site, as
// parallel says, and the test calls parallel(t) first, so that it runs with
// the other parallel tests instead of holding up the serial ones.
func eachSite(t *testing.T, f func(t *testing.T, on rigSite)) {
	t.Helper()
	for _, slurm := range []string{firstSite, secondSite} {
		onSite(t, slurm, f)
	}
}

// onSite is eachSite on the one site that runs slurm: for a test whose
// checks run on the first site in other tests, serially, with the parts
// that read the site as a whole (sshd restarts and overrides, session
// counts), and whose parts that share nothing run here on the second.
func onSite(t *testing.T, slurm string, f func(t *testing.T, on rigSite)) {
	t.Helper()
	t.Run("slurm-"+slurm, func(t *testing.T) {
		parallel(t)
		rig := testrig.Load(t)
		switch slurm {
		case firstSite:
		case secondSite:
			// skips the subtest (fails it in CI) on a rig without it
			rig = rig.Site2(t)
		default:
			t.Fatalf("the rig has no site running Slurm %s", slurm)
		}
		f(t, rigSite{slurm: slurm, rig: rig})
	})
}
