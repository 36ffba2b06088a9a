//go:build bench

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// startWAN starts this program's delaying relay (wan.Main), name, in the network
// namespace netns ("" for the host's), listening on its loopback and
// passing each connection to target with half of rtt added each way, and
// returns it with the address it listens on.
func startWAN(ctx context.Context, name, self, dir, netns, target string, rtt time.Duration) (*proc, string, error) {
	argv := append([]string{self, wan.Command}, wan.Args("127.0.0.1:0", target, wan.Link{Delay: rtt / 2})...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if netns != "" {
		cmd = rigbench.InNetns(ctx, netns, argv...)
	}
	// A pipe of our own rather than StdoutPipe, which Wait (called as soon
	// as the process starts) may close under the read.
	out, w, err := os.Pipe()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	defer out.Close()
	cmd.Stdout = w
	p, err := startProc(name, filepath.Join(dir, name+".log"), cmd)
	w.Close()
	if err != nil {
		return nil, "", err
	}
	addr, err := wan.ReadAddr(out, 10*time.Second)
	if err != nil {
		p.stop()
		return nil, "", fmt.Errorf("%s: %w (see its log)", name, err)
	}
	return p, addr, nil
}
