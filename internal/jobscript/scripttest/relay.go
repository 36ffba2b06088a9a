// Package scripttest holds what the tests of the job script and of the
// Slurm client share to run batch scripts: the relay binary, what a script
// prints when its relay dies, and the names a reverse tunnel took before
// salts.
package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// BuildRelay builds cmd/sluice-relay, static, into a temporary directory.
func BuildRelay(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sluice-relay")
	cmd := exec.Command("go", "build", "-o", out, "github.com/sluice-hpc/sluice/cmd/sluice-relay")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build sluice-relay: %v\n%s", err, b)
	}
	return out
}

// RelayPID finds the relay serving the socket directory dir (on the rig,
// the node's processes are the host's).
func RelayPID(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if i := slices.Index(args, "--dir"); i >= 0 && i+1 < len(args) && args[i+1] == dir {
			return pid
		}
	}
	t.Fatalf("no relay running for %s", dir)
	return 0
}

// LastSluice is the last line of out starting with "sluice: ".
func LastSluice(out string) string {
	last := ""
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "sluice: ") {
			last = strings.TrimSuffix(l, "\n")
		}
	}
	return last
}

// RelayKilled are the lines a job ends with when its relay is killed while
// it runs: with the relay's status (SIGKILL), or, from bash now and then,
// without it (see sluice_rev_relay_status).
var RelayKilled = []string{
	"sluice: reverse tunnel: the relay exited with status 137 while the job ran, and the containers were stopped: ",
	"sluice: reverse tunnel: the relay exited (the shell lost its exit status) while the job ran, and the containers were stopped: ",
}

// RelayKilledLine reports whether last is one of RelayKilled.
func RelayKilledLine(last string) bool {
	for _, want := range RelayKilled {
		if strings.HasPrefix(last, want) {
			return true
		}
	}
	return false
}
