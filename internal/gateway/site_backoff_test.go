package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// downSite is a Site whose login node refuses every connection, counting
// the attempts.
func downSite(lo, hi time.Duration) (*Site, *atomic.Int32) {
	var dials atomic.Int32
	return &Site{Hop: &tunnel.Hop{
		LoginAddr:     "login.test:22",
		LoginHostKeys: ssh.InsecureIgnoreHostKey(),
		NodeHostKeys:  ssh.InsecureIgnoreHostKey(),
		Dial: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("connection refused (test)")
		},
	}, BackoffMin: lo, BackoffMax: hi}, &dials
}

// TestSiteBacksOffWhileDown: while the login node is down, the shadows
// asking for their nodes are refused at once with the last failure, and the
// login node sees one attempt per backoff, not one per shadow.
func TestSiteBacksOffWhileDown(t *testing.T) {
	s, dials := downSite(time.Hour, time.Hour)
	ctx := context.Background()
	if _, err := s.Node(ctx, "n1"); err == nil || errors.Is(err, ErrBackoff) {
		t.Fatalf("first attempt: %v; want the login node's failure", err)
	}
	first := dials.Load()
	if first == 0 {
		t.Fatal("no dial made")
	}
	for _, node := range []string{"n1", "n2", "n1"} {
		_, err := s.Node(ctx, node)
		if !errors.Is(err, ErrBackoff) || !strings.Contains(fmt.Sprint(err), "connection refused (test)") {
			t.Errorf("node %s during the backoff: %v; want ErrBackoff with the last failure", node, err)
		}
	}
	if n := dials.Load(); n != first {
		t.Errorf("%d dials after 3 more requests during the backoff; want %d", n, first)
	}
}

// TestSiteRetriesAfterBackoff: once the backoff passed, the next request
// tries again; a request whose context ended does not count as the
// site's failure.
func TestSiteRetriesAfterBackoff(t *testing.T) {
	s, dials := downSite(10*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	s.Node(ctx, "n1")
	first := dials.Load()
	time.Sleep(25 * time.Millisecond)
	if _, err := s.Node(ctx, "n1"); errors.Is(err, ErrBackoff) {
		t.Fatalf("after the backoff: %v; want another attempt", err)
	}
	if n := dials.Load(); n <= first {
		t.Errorf("%d dials after the backoff; want more than %d", n, first)
	}

	s, _ = downSite(time.Hour, time.Hour)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	s.Node(gone, "n1")
	if err := s.loginGate.check(time.Now()); err != nil {
		t.Errorf("the gate after a request whose context ended: %v; want it open", err)
	}
}

// TestRetryGateDoubles: the wait doubles from the least to the most, less
// up to half at random, and never overflows.
func TestRetryGateDoubles(t *testing.T) {
	var g retryGate
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		g.failed(now, errors.New("down"), time.Second, 10*time.Second)
		if wait := g.until.Sub(now); wait < want/2 || wait > want {
			t.Errorf("failure %d: wait %v; want within [%v, %v]", i+1, wait, want/2, want)
		}
	}
	for range 100 {
		g.failed(now, errors.New("down"), time.Hour, time.Duration(1<<63-1))
	}
	if wait := g.until.Sub(now); wait <= 0 {
		t.Errorf("after 100 failures with a large least wait: %v; want positive", wait)
	}
}
