// Package testrig gives tests the local rig (hack/rig): the addresses, users,
// keys and paths it wrote to its rig.env file.
//
// Tests that need the rig call Load. Outside CI a missing rig skips the test
// with the reason; in CI (CI=true) it fails it, since nothing may be skipped
// there.
//
// The rig is one shared world (its sshds are restarted, its Slurm queue and
// session processes are counted by tests), so one test binary uses it at a
// time: the first Load of a process takes the rig's lock and holds it until
// the process exits. `go test` may then build and run the packages in
// parallel; those with rig tests wait for each other. (tests.lock, not
// rig.sh's own rig.lock, which a test's rig.sh restart takes.)
package testrig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/rigenv"
)

// Rig is the running rig, as rig.env describes it.
type Rig struct {
	vars map[string]string
	// svcPrefix names the site's services for rig.sh: "" on the first
	// site, "site2-" on the second.
	svcPrefix string
}

// Load reads rig.env, or skips (fails in CI) the test when the rig is not up.
func Load(t testing.TB) *Rig {
	t.Helper()
	vars, err := rigenv.Read(rigenv.File())
	if err != nil {
		Unavailable(t, "rig not up (run hack/rig/rig.sh up): "+err.Error())
	}
	lockOnce.Do(func() { lockWait, lockErr = lock(filepath.Join(filepath.Dir(rigenv.File()), "tests.lock")) })
	if lockErr != nil {
		t.Fatal(lockErr)
	}
	if lockWait > time.Second {
		t.Logf("testrig: waited %s for the rig, held by another test binary", lockWait.Round(time.Second))
		lockWait = 0
	}
	return &Rig{vars: vars}
}

var (
	lockOnce sync.Once
	lockFile *os.File // open for the life of the process: the lock goes with it
	lockWait time.Duration
	lockErr  error
)

// lock takes an exclusive flock on file, waiting for another process that
// holds it, and says how long it waited.
func lock(file string) (time.Duration, error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("testrig: lock the rig: %w", err)
	}
	start := time.Now()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("testrig: lock the rig: %s: %w", file, err)
	}
	lockFile = f
	return time.Since(start), nil
}

// Get returns the value of a rig.env key, failing the test if it is missing.
func (r *Rig) Get(t testing.TB, key string) string {
	t.Helper()
	v, ok := r.vars[key]
	if !ok || v == "" {
		t.Fatalf("rig.env has no %s", key)
	}
	return v
}

// Lookup returns the value of a rig.env key and whether it is set.
func (r *Rig) Lookup(key string) (string, bool) {
	v, ok := r.vars[key]
	return v, ok && v != ""
}

// Ctl runs hack/rig/rig.sh with args (for example "restart", "sshd-login")
// and fails the test if it fails.
func (r *Rig) Ctl(t testing.TB, args ...string) {
	t.Helper()
	script := filepath.Join(repoRoot(t), "hack", "rig", "rig.sh")
	out, err := exec.Command(script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("rig.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Unavailable skips the test for want of something the machine lacks, with
// the reason; in CI (CI=true) it fails the test instead, since CI installs
// everything the tests need and nothing may be skipped there.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip(reason)
}

func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testrig: cannot find the repository root")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// OverrideNodeSSHD sets options of the compute node's sshd (sshd_config
// lines, which win over the rig's own) and restarts it; the options are
// removed, and the sshd restarted, when the test ends. Connections made
// before keep the options they were made with.
func (r *Rig) OverrideNodeSSHD(t testing.TB, options string) {
	t.Helper()
	r.overrideSSHD(t, "sshd-node", r.Get(t, "RIG_SSHD_NODE_OVERRIDE"), options)
}

// OverrideLoginSSHD is OverrideNodeSSHD for the login node's sshd.
func (r *Rig) OverrideLoginSSHD(t testing.TB, options string) {
	t.Helper()
	r.overrideSSHD(t, "sshd-login", r.Get(t, "RIG_SSHD_LOGIN_OVERRIDE"), options)
}

func (r *Rig) overrideSSHD(t testing.TB, svc, file, options string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(options), 0o644); err != nil {
		t.Fatalf("sshd override: %v", err)
	}
	svc = r.svcPrefix + svc
	r.Ctl(t, "restart", svc)
	t.Cleanup(func() {
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Errorf("sshd override: %v", err)
		}
		r.Ctl(t, "restart", svc)
	})
}
