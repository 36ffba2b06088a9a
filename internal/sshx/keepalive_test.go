package sshx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

func dialTest(t *testing.T, srv *sshxtest.Server) *ssh.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, dialer(), srv.Addr, clientConfig(t, srv, srv.HostKey.PublicKey()))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runKeepAlive starts KeepAlive and returns a channel with its result.
func runKeepAlive(ctx context.Context, c ssh.Conn, interval, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- KeepAlive(ctx, c, interval, timeout) }()
	return done
}

func waitResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("KeepAlive did not return within 10s")
		return nil
	}
}

func TestKeepAliveAnswered(t *testing.T) {
	srv := sshxtest.Start(t)
	c := dialTest(t, srv)
	if err := Ping(context.Background(), c, 5*time.Second); err != nil {
		t.Fatalf("Ping = %v; want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runKeepAlive(ctx, c, 10*time.Millisecond, 5*time.Second)
	// Several rounds must pass without the connection being closed.
	for range 5 {
		if err := Ping(context.Background(), c, 5*time.Second); err != nil {
			t.Fatalf("Ping during KeepAlive = %v; want nil", err)
		}
	}
	cancel()
	if err := waitResult(t, done); err != nil {
		t.Fatalf("KeepAlive after cancel = %v; want nil", err)
	}
	if _, err := c.NewSession(); err != nil {
		t.Errorf("NewSession after KeepAlive ended: %v; want the connection left open", err)
	}
}

func TestKeepAliveUnanswered(t *testing.T) {
	srv := sshxtest.Start(t)
	c := dialTest(t, srv)
	srv.SetSilent(true)
	err := waitResult(t, runKeepAlive(context.Background(), c, 10*time.Millisecond, 100*time.Millisecond))
	if !errors.Is(err, errNoReply) {
		t.Fatalf("KeepAlive = %v; want a no-reply error", err)
	}
	if _, err := c.NewSession(); err == nil {
		t.Error("NewSession after a failed keepalive succeeded; want the connection closed")
	}
}

func TestKeepAliveConnectionDropped(t *testing.T) {
	srv := sshxtest.Start(t)
	c := dialTest(t, srv)
	done := runKeepAlive(context.Background(), c, time.Hour, time.Second)
	srv.Drop()
	err := waitResult(t, done)
	if err == nil || !strings.Contains(err.Error(), "ssh connection closed") {
		t.Fatalf("KeepAlive = %v; want a closed-connection error", err)
	}
}

func TestKeepAliveBadArguments(t *testing.T) {
	srv := sshxtest.Start(t)
	c := dialTest(t, srv)
	if err := KeepAlive(context.Background(), c, 0, time.Second); err == nil {
		t.Error("KeepAlive with interval 0 = nil; want an error")
	}
}
