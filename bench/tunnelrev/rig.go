//go:build bench

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/rigenv"
)

// Network namespaces of the rig.
const (
	nodeNetns  = "/run/netns/sluice-node"
	loginNetns = "/run/netns/sluice-login"
)

// rig is what the benchmark takes from the rig's rig.env.
type rig struct {
	loginAddr      string // host:port of the login sshd
	loginHost      string // the login node's address on the cluster's side
	loginPort      string
	nodeAddr       string // the compute node's address
	node           string // the compute node's name
	user           string
	uid            int
	key            string
	knownHosts     string
	nodeKnownHosts string
	redis          string // host:port of the cluster's Redis
	socketRoot     string
}

func loadRig() (*rig, error) {
	vars, err := rigenv.Read(rigenv.File())
	if err != nil {
		return nil, fmt.Errorf("rig env: %w", err)
	}
	need := []string{"RIG_LOGIN_ADDR", "RIG_LOGIN_PORT", "RIG_NODE_NAME", "RIG_NODE_ADDR", "RIG_USER", "RIG_USER_UID", "RIG_KEY",
		"RIG_KNOWN_HOSTS", "RIG_NODE_KNOWN_HOSTS", "RIG_REDIS_ADDR", "RIG_SOCKET_DIR_ROOT"}
	for _, k := range need {
		if vars[k] == "" {
			return nil, fmt.Errorf("rig env: %s is not set", k)
		}
	}
	uid, err := strconv.Atoi(vars["RIG_USER_UID"])
	if err != nil {
		return nil, fmt.Errorf("rig env: RIG_USER_UID: %w", err)
	}
	return &rig{
		loginAddr:      vars["RIG_LOGIN_ADDR"] + ":" + vars["RIG_LOGIN_PORT"],
		loginHost:      vars["RIG_LOGIN_ADDR"],
		loginPort:      vars["RIG_LOGIN_PORT"],
		nodeAddr:       vars["RIG_NODE_ADDR"],
		node:           vars["RIG_NODE_NAME"],
		user:           vars["RIG_USER"],
		uid:            uid,
		key:            vars["RIG_KEY"],
		knownHosts:     vars["RIG_KNOWN_HOSTS"],
		nodeKnownHosts: vars["RIG_NODE_KNOWN_HOSTS"],
		redis:          vars["RIG_REDIS_ADDR"],
		socketRoot:     vars["RIG_SOCKET_DIR_ROOT"],
	}, nil
}

// asUser returns the command that runs argv as the job's user in the
// network namespace netns. nsenter and setpriv both exec, so the process
// started is argv's own.
func (r *rig) asUser(ctx context.Context, netns string, argv ...string) *exec.Cmd {
	id := strconv.Itoa(r.uid)
	args := append([]string{"--net=" + netns, "setpriv", "--reuid=" + id, "--regid=" + id, "--init-groups", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "USER=" + r.user}
	return cmd
}

// socketDir makes a fresh pod socket directory, <root>/<uuid>, drwx------
// and owned by the job's user, as the job's pre-exec snippet does.
func (r *rig) socketDir() (string, error) {
	dir := filepath.Join(r.socketRoot, newUUID())
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	if err := os.Chown(dir, r.uid, r.uid); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("socket directory: %w", err)
	}
	return dir, nil
}

// newUUID returns a random version 4 UUID, as a pod UID looks.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// build compiles the real sluice-relay and sluice-tunnel (static, as
// shipped, but keeping symbols for perf) and copies this program into dir,
// which the job's user can read.
func build(ctx context.Context, dir string, log io.Writer) (relayBin, tunnelBin, self string, err error) {
	relayBin = filepath.Join(dir, "sluice-relay")
	tunnelBin = filepath.Join(dir, "sluice-tunnel")
	for pkg, out := range map[string]string{"./cmd/sluice-relay": relayBin, "./cmd/sluice-tunnel": tunnelBin} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = log
		if err := cmd.Run(); err != nil {
			return "", "", "", fmt.Errorf("go build %s (run from the module's root): %w", pkg, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", "", "", fmt.Errorf("find this program: %w", err)
	}
	self = filepath.Join(dir, "tunnelrev")
	if err := copyFile(exe, self, 0o755); err != nil {
		return "", "", "", fmt.Errorf("copy this program: %w", err)
	}
	return relayBin, tunnelBin, self, nil
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

// firstLine reads a process's first line of output: the address a server
// bound.
func firstLine(r io.Reader) (string, error) {
	var b strings.Builder
	one := make([]byte, 1)
	for {
		n, err := r.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return b.String(), nil
			}
			b.WriteByte(one[0])
		}
		if err != nil {
			return b.String(), err
		}
	}
}
