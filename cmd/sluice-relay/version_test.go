package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// buildRelay builds this command with its version stamped as stamp and
// returns the binary's path.
func buildRelay(t *testing.T, stamp string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice-relay")
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/sluice-hpc/sluice/internal/version.version="+stamp, "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestVersionFlag checks that --version prints internal/version's version,
// the one sluice-vk and sluice-tunnel print, without --addr or --dir, and
// that the usage names it.
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildRelay(t, "v9.8.7-test")
	want := "sluice-relay v9.8.7-test (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, flag := range []string{"--version", "-version"} {
		out, err := exec.Command(bin, flag).Output()
		if err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		if string(out) != want {
			t.Errorf("%s printed %q; want %q", flag, out, want)
		}
	}

	cmd := exec.Command(bin, "--version", "extra")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Errorf("--version extra: %v; want exit status %d", err, exitUsage)
	}
	if !strings.Contains(string(out), `unexpected arguments ["extra"]`) {
		t.Errorf("--version extra printed %q; want it to name the argument", out)
	}

	out, _ = exec.Command(bin, "-h").CombinedOutput()
	if !strings.Contains(string(out), "sluice-relay --version") || !strings.Contains(string(out), "-version") {
		t.Errorf("usage %q; want it to name --version", out)
	}
}

// TestVersionString checks the unstamped form: the command's name, then
// internal/version's version and the toolchain.
func TestVersionString(t *testing.T) {
	s := versionString()
	if !strings.HasPrefix(s, "sluice-relay v") || !strings.HasSuffix(s, " ("+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+")") {
		t.Errorf("versionString() = %q; want sluice-relay v… (%s %s/%s)", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
}
