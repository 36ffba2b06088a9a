package pipe

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// RWConn is a reader and a writer (a process's standard input and output,
// an SSH session's) as a net.Conn, for Relay. It has no addresses or
// deadlines; CloseWrite closes W, the way a half-close ends a socket's
// sending side, and Close closes both.
type RWConn struct {
	R io.ReadCloser
	W io.WriteCloser
	// Name is its address's string, for errors and logs.
	Name string

	wOnce sync.Once // W is closed once: a relay may half-close it as its context ends
	wErr  error
}

var _ net.Conn = (*RWConn)(nil)

func (c *RWConn) Read(p []byte) (int, error)  { return c.R.Read(p) }
func (c *RWConn) Write(p []byte) (int, error) { return c.W.Write(p) }

// CloseWrite closes W. A W whose reader is gone already (an SSH session
// whose command ended: io.EOF) is closed all the same, without error.
func (c *RWConn) CloseWrite() error {
	if err := c.closeW(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Close closes R and W.
func (c *RWConn) Close() error { return errors.Join(c.R.Close(), c.closeW()) }

// closeW closes W the first time; an SSH session's stdin is not safe to
// close from two goroutines at once.
func (c *RWConn) closeW() error {
	c.wOnce.Do(func() { c.wErr = c.W.Close() })
	return c.wErr
}

func (c *RWConn) LocalAddr() net.Addr              { return rwAddr(c.Name) }
func (c *RWConn) RemoteAddr() net.Addr             { return rwAddr(c.Name) }
func (c *RWConn) SetDeadline(time.Time) error      { return nil }
func (c *RWConn) SetReadDeadline(time.Time) error  { return nil }
func (c *RWConn) SetWriteDeadline(time.Time) error { return nil }

type rwAddr string

func (rwAddr) Network() string  { return "stdio" }
func (a rwAddr) String() string { return string(a) }
