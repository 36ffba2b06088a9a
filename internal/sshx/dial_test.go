package sshx

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// clientConfig returns a config for srv whose host keys come from a
// known_hosts file pinning pinned.
func clientConfig(t *testing.T, srv *sshxtest.Server, pinned ssh.PublicKey) *ssh.ClientConfig {
	t.Helper()
	cb, err := HostKeys(sshxtest.KnownHosts(t, srv.Addr, pinned))
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	return &ssh.ClientConfig{
		User:              "alice",
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(srv.ClientKey)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: HostKeyAlgorithms(cb, srv.Addr),
	}
}

func dialer() DialFunc {
	var d net.Dialer
	return d.DialContext
}

func TestDial(t *testing.T) {
	srv := sshxtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := Dial(ctx, dialer(), srv.Addr, clientConfig(t, srv, srv.HostKey.PublicKey()))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	out, err := sess.Output("echo hello")
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("echo hello = %q, %v; want %q", out, err, "hello\n")
	}

	// A second hop over the first connection: Dial works over any dialer.
	hop, err := Dial(ctx, c.DialContext, srv.Addr, clientConfig(t, srv, srv.HostKey.PublicKey()))
	if err == nil {
		hop.Close()
		t.Fatal("Dial through a server without direct-tcpip succeeded; want an error")
	}
	if !strings.Contains(err.Error(), "ssh dial "+srv.Addr) {
		t.Errorf("jump Dial error = %q; want it to name the dial", err)
	}
}

func TestDialRefusesUnpinnedKey(t *testing.T) {
	srv := sshxtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stranger := sshxtest.NewSigner(t).PublicKey()
	_, err := Dial(ctx, dialer(), srv.Addr, clientConfig(t, srv, stranger))
	var hke *HostKeyError
	var keyErr *knownhosts.KeyError
	if !errors.As(err, &hke) || !errors.As(err, &keyErr) || len(keyErr.Want) != 1 {
		t.Fatalf("Dial = %v; want a host key mismatch", err)
	}
	if !strings.Contains(err.Error(), "host key mismatch") {
		t.Errorf("error %q does not say host key mismatch", err)
	}
}

func TestDialNeedsHostKeyCallback(t *testing.T) {
	dialed := false
	dial := func(context.Context, string, string) (net.Conn, error) {
		dialed = true
		return nil, errors.New("unreachable")
	}
	for _, cfg := range []*ssh.ClientConfig{nil, {User: "alice"}} {
		_, err := Dial(context.Background(), dial, "127.0.0.1:22", cfg)
		if err == nil || !strings.Contains(err.Error(), "no host key callback") {
			t.Errorf("Dial(%v) = %v; want a missing host key callback error", cfg, err)
		}
	}
	if dialed {
		t.Error("Dial dialed without a host key callback")
	}
}

func TestDialHonoursContext(t *testing.T) {
	// A listener that accepts and never speaks: the handshake hangs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cfg := &ssh.ClientConfig{User: "alice", HostKeyCallback: func(string, net.Addr, ssh.PublicKey) error { return nil }}
	start := time.Now()
	_, err = Dial(ctx, dialer(), ln.Addr().String(), cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v; want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial returned after %v; want soon after the 200ms deadline", d)
	}
}
