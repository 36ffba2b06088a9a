package kubeletstream

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// TestConnsLoginDialHoldsNoOne: while the login connection is being made
// (a login node that accepts and never answers, until Hop.Timeout), a
// stream that gives up (its context ends) returns at once, and so does
// Close: one slow login dial must not hold every stream of the node.
func TestConnsLoginDialHoldsNoOne(t *testing.T) {
	addr := sshxtest.SilentListener(t)
	const dialFor = 3 * time.Second
	c := &Conns{Hop: &tunnel.Hop{LoginAddr: addr, User: "alice", Timeout: dialFor,
		LoginHostKeys: ssh.InsecureIgnoreHostKey(), NodeHostKeys: ssh.InsecureIgnoreHostKey()}} //nolint:gosec // never reached
	dialled := make(chan error, 1)
	go func() {
		_, err := c.Login(t.Context())
		dialled <- err
	}()
	time.Sleep(100 * time.Millisecond) // the dial is under way

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := c.Node(ctx, "node1"); err == nil {
		t.Error("Node: got a connection; want its context's end")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Node gave up after %v; want about 200ms, not the login dial's %v", took.Round(time.Millisecond), dialFor)
	}
	start = time.Now()
	c.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v; want at once, not the login dial's %v", took.Round(time.Millisecond), dialFor)
	}
	if err := <-dialled; err == nil {
		t.Error("Login: got a connection from a login node that never answered")
	}
}
