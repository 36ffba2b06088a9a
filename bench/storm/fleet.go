//go:build bench

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// fleet is n sluice-tunnel forward processes against the relay, each
// logging JSON to a pipe the fleet reads: it records when each connected
// and how often a connection failed.
type fleet struct {
	procs []*exec.Cmd
	logs  []*os.File

	mu        sync.Mutex
	connected []time.Time // last "ssh connected" of each tunnel
	failures  []time.Time // every "ssh connect failed", any tunnel
	ups       chan int    // the index of a tunnel that connected
}

// tunnelArgs are the flags of one tunnel besides its port and log.
type tunnelArgs struct {
	bin, login, user, key, knownHosts, nodeFile string
	extra                                       []string // the variant's flags
}

func startFleet(ctx context.Context, dir string, n int, a tunnelArgs, stagger time.Duration) (*fleet, error) {
	f := &fleet{connected: make([]time.Time, n), ups: make(chan int, 16*n)}
	for i := range n {
		port, err := freePort()
		if err != nil {
			f.stop()
			return nil, err
		}
		args := append([]string{"forward",
			"--login=" + a.login, "--user=" + a.user, "--key=" + a.key,
			"--login-known-hosts=" + a.knownHosts, "--node-known-hosts=" + a.knownHosts,
			"--node-file=" + a.nodeFile, "--target=login", "--listen=127.0.0.1",
			"--ports=" + strconv.Itoa(port), "--log-level=info",
		}, a.extra...)
		cmd := exec.CommandContext(ctx, a.bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			f.stop()
			return nil, err
		}
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("tunnel-%02d.log", i)))
		if err != nil {
			f.stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			logFile.Close()
			f.stop()
			return nil, fmt.Errorf("start tunnel %d: %w", i, err)
		}
		f.procs = append(f.procs, cmd)
		f.logs = append(f.logs, logFile)
		go f.read(i, io.TeeReader(stderr, logFile))
		select {
		case <-time.After(stagger):
		case <-ctx.Done():
			f.stop()
			return nil, ctx.Err()
		}
	}
	return f, nil
}

// read follows tunnel i's log.
func (f *fleet) read(i int, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line struct {
			Msg string `json:"msg"`
			Hop string `json:"hop"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		now := time.Now()
		switch line.Msg {
		case "ssh connected":
			if line.Hop != "login" {
				continue
			}
			f.mu.Lock()
			f.connected[i] = now
			f.mu.Unlock()
			f.ups <- i
		case "ssh connect failed":
			f.mu.Lock()
			f.failures = append(f.failures, now)
			f.mu.Unlock()
		}
	}
}

// waitAllSince waits until every tunnel has connected after since, and
// returns when the last one did.
func (f *fleet) waitAllSince(ctx context.Context, since time.Time) (time.Time, error) {
	for {
		f.mu.Lock()
		last, all := time.Time{}, true
		for _, t := range f.connected {
			if !t.After(since) {
				all = false
				break
			}
			if t.After(last) {
				last = t
			}
		}
		f.mu.Unlock()
		if all {
			return last, nil
		}
		select {
		case <-f.ups:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("not every tunnel reconnected: %w", ctx.Err())
		}
	}
}

// failuresSince counts the failed connections logged after since.
func (f *fleet) failuresSince(since time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, t := range f.failures {
		if t.After(since) {
			n++
		}
	}
	return n
}

func (f *fleet) stop() {
	for _, c := range f.procs {
		c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range f.procs {
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.Process.Kill()
			<-done
		}
	}
	for _, l := range f.logs {
		l.Close()
	}
}
