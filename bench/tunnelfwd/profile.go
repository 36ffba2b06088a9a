//go:build bench

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// profileForward profiles the library sluice-tunnel runs, tunnel.Forward
// with the same hop and settings, in this process (which otherwise only
// waits for its load processes) while the throughput and requests tests
// run through it, and writes the CPU profile to b.o.cpuProfile.
func profileForward(ctx context.Context, b *bench, r *rigbench.Rig, port int) error {
	signer, err := sshx.Signer(r.Key)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	loginKeys, err := sshx.HostKeys(r.KnownHosts)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	nodeKeys, err := sshx.HostKeys(r.NodeKnownHosts)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	logFile, err := os.Create(filepath.Join(b.dir, "profile-forward.log"))
	if err != nil {
		ln.Close()
		return fmt.Errorf("profile: %w", err)
	}
	defer logFile.Close()
	fwd := &tunnel.Forward{
		Hop: &tunnel.Hop{
			LoginAddr: r.LoginAddr, User: r.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
			LoginHostKeys: loginKeys, NodeHostKeys: nodeKeys,
		},
		Target:   tunnel.TargetNode,
		Ports:    []int{port},
		NodeFile: filepath.Join(b.dir, "node"),
		Listener: func(int) (net.Listener, error) { return ln, nil },
		Log:      slog.New(slog.NewJSONHandler(logFile, nil)),
	}
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	wg.Go(func() {
		if err := fwd.Run(fctx); err != nil {
			fmt.Fprintln(os.Stderr, "tunnelfwd: profile: forward:", err)
		}
	})
	p := &path{name: "sluice in-process", addr: ln.Addr().String(), log: logFile.Name()}
	if err := waitReady(p, 30*time.Second); err != nil {
		return fmt.Errorf("profile: %w", err)
	}

	out, err := os.Create(b.o.cpuProfile)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	fmt.Fprintln(os.Stderr, "tunnelfwd: profiling an in-process tunnel.Forward")
	for _, t := range b.tests() {
		sm, err := b.measure(ctx, p, t.spec)
		if err != nil {
			return fmt.Errorf("profile: %s: %w", t.key, err)
		}
		fmt.Fprintf(os.Stderr, "profile    %-10s %-12s %s\n", t.key, "in-process", sm.summary(t.spec.Test))
	}
	return nil
}
