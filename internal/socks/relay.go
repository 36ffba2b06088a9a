package socks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// copier copies one direction of a relay, from src to dst, and half-closes
// dst when src ends, so that the peer behind dst sees EOF while the other
// direction goes on.
type copier struct {
	name     string // the direction, "client to destination"
	dst, src net.Conn
	n        int64 // bytes copied
}

func (c *copier) run() error {
	n, err := io.Copy(c.dst, c.src)
	c.n = n
	if err != nil {
		return fmt.Errorf("copy %s: %w", c.name, err)
	}
	if err := closeWrite(c.dst); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("copy %s: close write: %w", c.name, err)
	}
	return nil
}

// closeWrite half-closes conn; a conn that cannot is closed whole.
func closeWrite(conn net.Conn) error {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return conn.Close()
}

// relay copies between client and dest both ways until both directions
// have ended. A direction that fails closes both connections, which ends
// the other one too; so does ctx ending. It returns the bytes sent (client
// to destination) and received, and the error of the direction that failed
// first; the error is nil when both ended with EOF, or when ctx ended.
func relay(ctx context.Context, client, dest net.Conn) (sent, received int64, err error) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			dest.Close()
		})
	}
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	up := &copier{name: "client to destination", dst: dest, src: client}
	down := &copier{name: "destination to client", dst: client, src: dest}
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
	e1, e2 := <-errs, <-errs
	if ctx.Err() != nil {
		return up.n, down.n, nil
	}
	return up.n, down.n, firstCause(e1, e2)
}

// firstCause is the error of the direction that failed first. An error
// saying that a connection was closed is no cause: the relay closed it
// itself, because the other direction failed or ended on a connection that
// cannot half-close.
func firstCause(e1, e2 error) error {
	for _, err := range []error{e1, e2} {
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
	}
	return nil
}
