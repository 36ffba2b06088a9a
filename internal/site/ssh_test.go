package site

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// countingDial dials TCP and counts the dials.
type countingDial struct {
	n atomic.Int64
	d net.Dialer
}

func (c *countingDial) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.n.Add(1)
	return c.d.DialContext(ctx, network, addr)
}

// testSSHConfig returns a config for srv that pins srv's host key.
func testSSHConfig(t *testing.T, srv *sshxtest.Server) SSHConfig {
	t.Helper()
	check, err := sshx.HostKeys(sshxtest.KnownHosts(t, srv.Addr, srv.HostKey.PublicKey()))
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	return SSHConfig{
		Addr:            srv.Addr,
		User:            "alice",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(srv.ClientKey)},
		HostKeyCallback: check,
		MaxStdout:       suiteMaxStdout,
		Logger:          testLogger(t),
	}
}

func newSSH(t *testing.T, cfg SSHConfig) *SSH {
	t.Helper()
	r, err := NewSSH(cfg)
	if err != nil {
		t.Fatalf("NewSSH: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestSSH(t *testing.T) {
	srv := sshxtest.Start(t)
	srv.SetMaxSessions(10)
	var dials countingDial
	cfg := testSSHConfig(t, srv)
	cfg.Dial = dials.Dial
	r := newSSH(t, cfg)
	testRunner(t, r, t.TempDir())
	if got := srv.Accepted(); got != 1 {
		t.Errorf("server accepted %d connections; want 1", got)
	}
	if got := dials.n.Load(); got != 1 {
		t.Errorf("dialed %d times; want 1", got)
	}
	if got := srv.PeakSessions(); got > 10 {
		t.Errorf("peak sessions = %d; want at most MaxSessions (10)", got)
	}
}

func TestSSHConfigRefused(t *testing.T) {
	srv := sshxtest.Start(t)
	good := testSSHConfig(t, srv)
	tests := []struct {
		name   string
		change func(*SSHConfig)
		want   string
	}{
		{"no addr", func(c *SSHConfig) { c.Addr = "" }, "Addr"},
		{"no port", func(c *SSHConfig) { c.Addr = "login.example.org" }, "Addr"},
		{"no user", func(c *SSHConfig) { c.User = "" }, "User"},
		{"no auth", func(c *SSHConfig) { c.Auth = nil }, "Auth"},
		{"no host keys", func(c *SSHConfig) { c.HostKeyCallback = nil }, "HostKeyCallback"},
		{"one session", func(c *SSHConfig) { c.MaxSessions = 1 }, "MaxSessions"},
		{"backoff", func(c *SSHConfig) { c.BackoffMin, c.BackoffMax = time.Second, time.Millisecond }, "BackoffMax"},
		{"negative", func(c *SSHConfig) { c.DialTimeout = -1 }, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.change(&cfg)
			_, err := NewSSH(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSSH = %v; want an error naming %s", err, tt.want)
			}
		})
	}
	r := newSSH(t, good)
	if got := r.cfg.HostKeyAlgorithms; len(got) != 1 || got[0] != ssh.KeyAlgoED25519 {
		t.Errorf("default HostKeyAlgorithms = %q; want the pinned key's [%s]", got, ssh.KeyAlgoED25519)
	}
}

func TestSSHUnpinnedHostKey(t *testing.T) {
	srv := sshxtest.Start(t)
	cfg := testSSHConfig(t, srv)
	check, err := sshx.HostKeys(sshxtest.KnownHosts(t, srv.Addr, sshxtest.NewSigner(t).PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	cfg.HostKeyCallback = check
	r := newSSH(t, cfg)
	marker := filepath.Join(t.TempDir(), "ran")
	_, err = r.Run(ctxFor(t), nil, "touch", marker)
	var hke *sshx.HostKeyError
	if !errors.As(err, &hke) || !strings.Contains(err.Error(), "host key mismatch") {
		t.Errorf("Run against an unpinned host key = %v; want a host key mismatch", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran (stat marker: %v)", err)
	}
	if err := r.Healthy(ctxFor(t)); err == nil {
		t.Error("Healthy against an unpinned host key = nil; want an error")
	}
}

func TestSSHReconnectsAfterDrop(t *testing.T) {
	srv := sshxtest.Start(t)
	r := newSSH(t, testSSHConfig(t, srv))
	ctx := ctxFor(t)
	for i := range 3 {
		if out, err := r.Run(ctx, nil, "echo", "ok"); err != nil || string(out) != "ok\n" {
			t.Fatalf("Run after %d drops = %q, %v; want ok", i, out, err)
		}
		if err := r.WriteFile(ctx, filepath.Join(t.TempDir(), "f"), []byte("x"), 0o600); err != nil {
			t.Fatalf("WriteFile after %d drops: %v", i, err)
		}
		srv.Drop()
	}
	if got := srv.Accepted(); got != 3 {
		t.Errorf("server accepted %d connections; want 3 (one per drop)", got)
	}
}

func TestSSHLostDuringCommand(t *testing.T) {
	srv := sshxtest.Start(t)
	r := newSSH(t, testSSHConfig(t, srv))
	ctx := ctxFor(t)
	marker := filepath.Join(t.TempDir(), "started")
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, nil, "sh", "-c", `touch "$1"; sleep 30`, "sh", marker)
		done <- err
	}()
	waitFor(t, func() bool { _, err := os.Stat(marker); return err == nil })
	srv.Drop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrConnLost) {
			t.Errorf("Run cut by a dropped connection = %v; want ErrConnLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the connection dropping")
	}
	if out, err := r.Run(ctx, nil, "echo", "again"); err != nil || string(out) != "again\n" {
		t.Errorf("Run after the drop = %q, %v; want again", out, err)
	}
}

func TestSSHKeepAliveDropsSilentConnection(t *testing.T) {
	srv := sshxtest.Start(t)
	cfg := testSSHConfig(t, srv)
	cfg.KeepAliveInterval, cfg.KeepAliveTimeout = 20*time.Millisecond, 100*time.Millisecond
	r := newSSH(t, cfg)
	ctx := ctxFor(t)
	if err := r.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	srv.SetSilent(true)
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.cur == nil
	})
	srv.SetSilent(false)
	if err := r.Healthy(ctx); err != nil {
		t.Fatalf("Healthy after reconnecting: %v", err)
	}
	if got := srv.Accepted(); got != 2 {
		t.Errorf("server accepted %d connections; want 2", got)
	}
}

func TestSSHDialFailuresBackOff(t *testing.T) {
	srv := sshxtest.Start(t)
	cfg := testSSHConfig(t, srv)
	cfg.BackoffMin, cfg.BackoffMax = 200*time.Millisecond, time.Second
	var dials atomic.Int64
	release := make(chan struct{})
	dialing := make(chan struct{}, 1)
	cfg.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
		dials.Add(1)
		dialing <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("connection refused")
	}
	r := newSSH(t, cfg)
	ctx := ctxFor(t)

	// Ten callers share one attempt, and all get its failure.
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() { _, errs[i] = r.Run(ctx, nil, "true") })
	}
	<-dialing
	waitFor(t, func() bool { return len(r.sessions) == 9 }) // every session slot taken or waiting
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("caller %d: %v; want the dial failure", i, err)
		}
	}
	if got := dials.Load(); got != 1 {
		t.Fatalf("dialed %d times for concurrent callers; want 1", got)
	}

	// During the backoff a caller gets the last failure at once.
	start := time.Now()
	_, err := r.Run(ctx, nil, "true")
	if err == nil || !strings.Contains(err.Error(), "next attempt in") || time.Since(start) > time.Second {
		t.Errorf("Run during backoff = %v after %v; want the last failure at once", err, time.Since(start))
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("dialed %d times during backoff; want 1", got)
	}

	// After the backoff the next caller dials again.
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return time.Now().After(r.retryAt)
	})
	if _, err := r.Run(ctx, nil, "true"); err == nil {
		t.Error("Run after backoff = nil; want the dial failure")
	}
	<-dialing
	if got := dials.Load(); got != 2 {
		t.Errorf("dialed %d times after backoff; want 2", got)
	}
}

func TestSSHDialHonoursContext(t *testing.T) {
	srv := sshxtest.Start(t)
	cfg := testSSHConfig(t, srv)
	cfg.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r := newSSH(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Run(ctx, nil, "true")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("Run while the dial hangs = %v after %v; want DeadlineExceeded soon after 200ms", err, time.Since(start))
	}
}

func TestSSHClosed(t *testing.T) {
	srv := sshxtest.Start(t)
	r := newSSH(t, testSSHConfig(t, srv))
	ctx := ctxFor(t)
	if err := r.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := r.Run(ctx, nil, "true"); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v; want ErrClosed", err)
	}
	if _, err := r.Stat(ctx, "/"); !errors.Is(err, ErrClosed) {
		t.Errorf("Stat after Close = %v; want ErrClosed", err)
	}
	if err := r.Healthy(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Healthy after Close = %v; want ErrClosed", err)
	}
}

// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not met within 10s")
		}
	}
}
