package tunnel

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestHopBeforeLogin: BeforeLogin is waited for before the login node is
// dialled, outside Timeout, and its error ends the attempt undialled.
func TestHopBeforeLogin(t *testing.T) {
	accept := func(string, net.Addr, ssh.PublicKey) error { return nil }
	dials := 0
	waited := false
	h := &Hop{
		LoginAddr:     "10.0.0.1:22",
		LoginHostKeys: accept,
		NodeHostKeys:  accept,
		Timeout:       10 * time.Millisecond,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials++
			return nil, errors.New("no network in this test")
		},
		BeforeLogin: func(ctx context.Context) error {
			// Longer than Timeout: the wait must not eat into it.
			time.Sleep(30 * time.Millisecond)
			waited = true
			return ctx.Err()
		},
	}
	_, err := h.Login(context.Background())
	if !waited || dials != 1 {
		t.Fatalf("waited %v, dials %d; want the wait then one dial", waited, dials)
	}
	if err == nil || err.Error() != "ssh dial 10.0.0.1:22: no network in this test" {
		t.Errorf("Login = %v; want the dial's own error, not a timeout", err)
	}

	stop := errors.New("stopped while waiting")
	h.BeforeLogin = func(context.Context) error { return stop }
	if _, err := h.Login(context.Background()); !errors.Is(err, stop) || dials != 1 {
		t.Errorf("Login = %v with %d dials; want the wait's error and no new dial", err, dials)
	}
}
