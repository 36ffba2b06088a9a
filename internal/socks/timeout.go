package socks

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// closeTimer closes a connection when a step of its handshake takes longer
// than it may. Unlike a deadline, it works on every net.Conn: the
// connections of SSH channels, for one, refuse deadlines.
type closeTimer struct {
	t       *time.Timer
	timeout time.Duration
	fired   atomic.Bool
}

// closeAfter closes c after d, unless stopped before.
func closeAfter(c net.Conn, d time.Duration) *closeTimer {
	ct := &closeTimer{timeout: d}
	ct.t = time.AfterFunc(d, func() {
		ct.fired.Store(true)
		c.Close()
	})
	return ct
}

// stop stops the timer and returns err, the error of the step it guarded;
// if the timer had closed the connection, it returns a timeout error
// instead, which wraps os.ErrDeadlineExceeded.
func (ct *closeTimer) stop(err error) error {
	ct.t.Stop()
	if ct.fired.Load() {
		return fmt.Errorf("not done within %v: %w", ct.timeout, os.ErrDeadlineExceeded)
	}
	return err
}

// Bounds of lingerClose.
const (
	lingerTime = time.Second
	lingerMax  = MaxRequestLen
)

// refuseRequest answers a request with the failure r, within lingerTime,
// and lingers (see lingerClose).
func refuseRequest(c net.Conn, r Reply) {
	t := closeAfter(c, lingerTime)
	if t.stop(writeReply(c, r, nil)) == nil {
		lingerClose(c)
	}
}

// lingerClose prepares a refused connection for its close, so that the
// client reads the answer: closing a socket with bytes unread (the rest of
// a request, a request sent with the greeting) would reset the connection,
// and the reset may destroy the answer before the client reads it. It
// half-closes c and discards what the client still sends, at most
// lingerMax bytes within lingerTime.
func lingerClose(c net.Conn) {
	t := closeAfter(c, lingerTime)
	defer t.stop(nil)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.CopyN(io.Discard, c, lingerMax)
}
