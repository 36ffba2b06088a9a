// Package pipe relays bytes between two connections both ways, half-closing
// each side when the other reaches EOF: what the tunnel does with each
// connection it carries and the SOCKS proxy with each client.
package pipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Counts are the bytes a relay carried each way.
type Counts struct {
	AToB, BToA int64
}

// Relay copies between a and b both ways until both directions have ended,
// half-closing each side when the other reaches EOF (a connection that
// cannot half-close is closed whole). A direction that fails closes both
// connections, which ends the other one too; so does ctx ending. It does
// not close a or b otherwise: the caller does. aName and bName name the
// sides in errors ("client", "node1:8080").
//
// count, if not nil, is told of each write as it happens (aToB tells the
// direction); without it the copies may use the kernel's splice.
//
// The error joins the errors of both directions, each naming its direction,
// leaving out one that only reports its connection closed under it because
// the other failed; it is nil when both ended with EOF. When ctx ended, the
// error says so.
func Relay(ctx context.Context, a, b net.Conn, aName, bName string, count func(aToB bool, n int64)) (Counts, error) {
	var closeOnce sync.Once
	closeBoth := func() {
		closeOnce.Do(func() {
			a.Close()
			b.Close()
		})
	}
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()

	up := &copier{name: aName + " to " + bName, dst: b, src: a}
	down := &copier{name: bName + " to " + aName, dst: a, src: b}
	if count != nil {
		up.count = func(n int64) { count(true, n) }
		down.count = func(n int64) { count(false, n) }
	}
	errs := make(chan error, 2)
	for _, c := range []*copier{up, down} {
		go func() {
			err := c.run()
			if err != nil {
				closeBoth()
			}
			errs <- err
		}()
	}
	err := firstCause(<-errs, <-errs)
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("relay %s and %s: %w: %w", aName, bName, context.Cause(ctx), err)
	}
	return Counts{AToB: up.n, BToA: down.n}, err
}

// copier copies one direction of a relay, from src to dst, and half-closes
// dst when src ends, so that the peer behind dst sees EOF while the other
// direction goes on.
type copier struct {
	name     string // the direction, "client to node1:8080"
	dst, src net.Conn
	count    func(n int64) // told of each write to dst as it happens; may be nil
	n        int64         // bytes copied
}

func (c *copier) run() error {
	var dst io.Writer = c.dst
	if c.count != nil {
		dst = countingWriter{w: c.dst, count: c.count}
	}
	n, err := io.Copy(dst, c.src)
	c.n = n
	if err != nil {
		return fmt.Errorf("copy %s: %w", c.name, err)
	}
	if err := CloseWrite(c.dst); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("copy %s: close write: %w", c.name, err)
	}
	return nil
}

// countingWriter tells count of the bytes each write carried.
type countingWriter struct {
	w     io.Writer
	count func(n int64)
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.count(int64(n))
	return n, err
}

// CloseWrite half-closes conn: a *net.TCPConn, a *net.UnixConn, an SSH
// channel's net.Conn. A conn that cannot is closed whole.
func CloseWrite(conn net.Conn) error {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return conn.Close()
}

// firstCause joins the errors of both directions, leaving out the one that
// only reports its connection closed under it because the other failed.
func firstCause(e1, e2 error) error {
	switch {
	case e1 != nil && e2 != nil && errors.Is(e2, net.ErrClosed) && !errors.Is(e1, net.ErrClosed):
		return e1
	case e1 != nil && e2 != nil && errors.Is(e1, net.ErrClosed) && !errors.Is(e2, net.ErrClosed):
		return e2
	}
	return errors.Join(e1, e2)
}
