//go:build bench

package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// relay stands for the login node on the host's loopback: it passes every
// connection to the login node's sshd, and can drop them all and refuse new
// ones for a while, as a login node that restarts does.
type relay struct {
	ln     net.Listener
	target string
	delay  time.Duration // added to every byte, each way: half the round trip

	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	downUntil time.Time
}

func newRelay(target string, rtt time.Duration) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, delay: rtt / 2, conns: map[net.Conn]struct{}{}}
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
	done := make(chan struct{}, 2)
	go func() { r.copy(up, c); done <- struct{}{} }()
	go func() { r.copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, up)
	r.mu.Unlock()
}

// chunk is what one read got, and when.
type chunk struct {
	at   time.Time
	data []byte
}

// copy copies src to dst, each read written r.delay after it arrived, as a
// link with that latency (and no bandwidth limit) would.
func (r *relay) copy(dst, src net.Conn) {
	if r.delay <= 0 {
		io.Copy(dst, src)
		return
	}
	line := make(chan chunk, 1024)
	go func() {
		defer close(line)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				line <- chunk{time.Now(), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range line {
		time.Sleep(time.Until(c.at.Add(r.delay)))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	for range line {
	}
}
