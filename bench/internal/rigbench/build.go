//go:build bench

package rigbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// Build builds the module's package pkg (./cmd/NAME) into dir as a static
// binary, with ldflags (empty for none), and returns its path. Run it from
// the module's root.
func Build(ctx context.Context, dir, pkg, ldflags string) (string, error) {
	out := filepath.Join(dir, path.Base(pkg))
	args := []string{"build", "-trimpath"}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s (run from the module's root): %w\n%s", pkg, err, b)
	}
	return out, nil
}

// CopySelf copies the running program into dir as name, readable and
// executable by everyone: the site user runs it as the benchmark's server
// and client.
func CopySelf(dir, name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("copy this program: %w", err)
	}
	dst := filepath.Join(dir, name)
	if err := copyFile(self, dst, 0o755); err != nil {
		return "", fmt.Errorf("copy this program: %w", err)
	}
	return dst, nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// WorkDir makes a new work directory for binaries, logs and configs, which
// the site user can enter.
func WorkDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("work directory: %w", err)
	}
	return dir, nil
}

// EndWorkDir removes dir, or, if keep, leaves it and says so on standard
// error: "note: dir".
func EndWorkDir(dir string, keep bool, note string) {
	if keep {
		fmt.Fprintf(os.Stderr, "%s: %s\n", note, dir)
		return
	}
	os.RemoveAll(dir)
}
