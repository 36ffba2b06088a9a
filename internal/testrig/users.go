package testrig

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// UID is the uid of the rig's user name (RIG_USER, RIG_OTHER_USER).
func UID(t testing.TB, name string) int {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

// RelayBinary builds sluice-relay where the rig's users can run it; it is
// removed when the test ends.
func RelayBinary(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluice-relay-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sluice-relay")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sluice-hpc/sluice/cmd/sluice-relay")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the relay: %v\n%s", err, out)
	}
	return bin
}
