//go:build bench

package main

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// relay stands for the login node on the host's loopback: it passes every
// connection to the login node's sshd, and can drop them all and refuse new
// ones for a while, as a login node that restarts does.
type relay struct {
	ln     net.Listener
	target string
	link   wan.Link // half the round trip, each way

	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	downUntil time.Time
}

func newRelay(target string, rtt time.Duration) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, link: wan.Link{Delay: rtt / 2}, conns: map[net.Conn]struct{}{}}
	go r.serve()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) close() {
	r.ln.Close()
	r.cut(0)
}

// cut closes every connection and refuses new ones (accepts and closes
// them at once: the login node's port answers, its sshd does not) for down.
func (r *relay) cut(down time.Duration) {
	r.mu.Lock()
	r.downUntil = time.Now().Add(down)
	conns := r.conns
	r.conns = map[net.Conn]struct{}{}
	r.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.pass(c)
	}
}

func (r *relay) pass(c net.Conn) {
	r.mu.Lock()
	down := time.Now().Before(r.downUntil)
	r.mu.Unlock()
	if down {
		c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", r.target, 10*time.Second)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	r.conns[c], r.conns[up] = struct{}{}, struct{}{}
	r.mu.Unlock()
	// Its error is a connection cut: what the storm is about.
	_ = r.link.Pipe(context.Background(), c, up)
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, up)
	r.mu.Unlock()
}
