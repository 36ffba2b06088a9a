//go:build bench

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// loadRig reads the rig's rig.env, with what the reverse chains need
// besides the usual.
func loadRig() (*rigbench.Rig, error) {
	return rigbench.Load("RIG_NODE_ADDR", "RIG_REDIS_ADDR", "RIG_SOCKET_DIR_ROOT")
}

// socketDir makes a fresh pod socket directory, <root>/<uuid>, drwx------
// and owned by the job's user, as the job's pre-exec snippet does.
func socketDir(r *rigbench.Rig) (string, error) {
	dir := filepath.Join(r.SocketRoot, newUUID())
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	if err := os.Chown(dir, r.UID, r.UID); err != nil {
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
func build(ctx context.Context, dir string) (relayBin, tunnelBin, self string, err error) {
	if relayBin, err = rigbench.Build(ctx, dir, "./cmd/sluice-relay", ""); err != nil {
		return "", "", "", err
	}
	if tunnelBin, err = rigbench.Build(ctx, dir, "./cmd/sluice-tunnel", ""); err != nil {
		return "", "", "", err
	}
	if self, err = rigbench.CopySelf(dir, "tunnelrev"); err != nil {
		return "", "", "", err
	}
	return relayBin, tunnelBin, self, nil
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
