//go:build bench

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// freePort returns a TCP port free on the host's 127.0.0.1 a moment ago.
// The job server listens on it in the node's namespace, and sluice-tunnel
// on the host (it listens on the job's port number).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer runs the job server on the compute node as the site user,
// listening on the node's 127.0.0.1:port.
func startServer(ctx context.Context, r *rigbench.Rig, self, dir string, port int) (*proc, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("job server: %w", err)
	}
	defer pr.Close()
	cmd := r.AsUser(ctx, rigbench.NodeNetns, self, "serve", "-addr", "127.0.0.1:"+strconv.Itoa(port))
	cmd.Stdout = pw
	p, err := startProc("job server", filepath.Join(dir, "server.log"), cmd)
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("job server: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.HasPrefix(s, "listening ") {
			return p, nil
		}
	case <-time.After(10 * time.Second):
	}
	p.stop()
	return nil, errors.New("job server: not listening within 10s (see server.log)")
}
