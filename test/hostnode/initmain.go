package hostnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// A container's process starts as the init helper: the host node re-runs
// its own binary (Options.InitPath) with initArg and a JSON initSpec, in a
// new mount namespace (CLONE_NEWNS, with / made private, by the fork).
// The helper bind-mounts the pod's volumes and hosts file there and execs
// the container's command, which so sees them at their paths while the
// host's mounts stay as they are.

// initArg is the first argument that makes a binary the init helper.
const initArg = "__sluice-hostnode-init"

// initSpec is what the helper does before it execs Argv.
type initSpec struct {
	Argv []string `json:"argv"`
	// Dir is the working directory; "/" if empty.
	Dir    string      `json:"dir,omitempty"`
	Mounts []initMount `json:"mounts,omitempty"`
}

// initMount binds Source onto Target.
type initMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// InitMain runs the init helper when the process was started as one
// (os.Args[1] is the helper's marker) and never returns then; otherwise it
// returns at once. A binary that runs a host node must call it first thing
// in main (cmd/sluice-hostnode does), and a test binary that starts one
// in-process calls it from TestMain.
func InitMain() {
	if len(os.Args) < 3 || os.Args[1] != initArg {
		return
	}
	err := runInit(os.Args[2])
	fmt.Fprintf(os.Stderr, "sluice-hostnode init: %v\n", err)
	os.Exit(127)
}

// runInit mounts, changes directory and execs; it returns only on failure.
func runInit(specJSON string) error {
	var spec initSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if len(spec.Argv) == 0 {
		return errors.New("spec: no command")
	}
	for _, m := range spec.Mounts {
		if err := bindMount(m); err != nil {
			return err
		}
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	path, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		return fmt.Errorf("command: %w", err)
	}
	if err := syscall.Exec(path, spec.Argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// bindMount binds m.Source onto m.Target, making the target (an empty
// directory or file, like the source) when it is missing.
func bindMount(m initMount) error {
	if !filepath.IsAbs(m.Target) {
		return fmt.Errorf("mount %s: the target is not an absolute path", m.Target)
	}
	src, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.Target, err)
	}
	if err := makeTarget(m.Target, src.IsDir()); err != nil {
		return fmt.Errorf("mount %s: %w", m.Target, err)
	}
	if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mount %s on %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		if err := unix.Mount("", m.Target, "", flags, ""); err != nil {
			return fmt.Errorf("mount %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

// makeTarget makes a missing mount point: a directory, or an empty file.
func makeTarget(target string, dir bool) error {
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
