package kubeletstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// errStalled ends a session whose client stopped taking what it was sent.
var errStalled = errors.New("the client took nothing of what it was sent")

// errSessionEnded ends the streams of a session whose connection ended.
var errSessionEnded = errors.New("the session's connection ended")

// watchedWriter is a streaming session's http.ResponseWriter. The
// connection it hands over when the protocol (SPDY or websocket) hijacks it
// ends the session, through end, when its reading ends; and it is closed
// when a write waits more than stall for the client to take it, instead of
// letting what the job sends pile up in sluice-vk meanwhile.
type watchedWriter struct {
	http.ResponseWriter
	stall time.Duration
	end   context.CancelCauseFunc

	mu   sync.Mutex
	conn net.Conn // the hijacked connection, if it was
}

// Hijack hands over the connection, and a buffered reader and writer that
// go through it (the server's own go around it) with what the server had
// already read.
func (w *watchedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response cannot be hijacked")
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	buffered, err := rw.Reader.Peek(rw.Reader.Buffered())
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("read what the server buffered: %w", err)
	}
	wc := &watchedConn{Conn: c, stall: w.stall, end: w.end}
	w.mu.Lock()
	w.conn = wc
	w.mu.Unlock()
	var r io.Reader = wc
	if len(buffered) > 0 {
		r = io.MultiReader(bytes.NewReader(bytes.Clone(buffered)), wc)
	}
	return wc, bufio.NewReadWriter(bufio.NewReader(r), bufio.NewWriter(wc)), nil
}

// close closes the hijacked connection, if any: virtual-kubelet leaves it
// open when the session's streams did not come in time, until the client
// closes it or the idle timeout (hours) ends it.
func (w *watchedWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil {
		w.conn.Close()
	}
}

// watchedConn is a hijacked connection; see watchedWriter.
type watchedConn struct {
	net.Conn
	stall time.Duration
	end   context.CancelCauseFunc
	once  sync.Once
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.end(errSessionEnded)
	}
	return n, err
}

// Write fails, and closes the connection, when the client took nothing for
// stall: a TLS connection cannot write again after a timed-out write, and
// the session's streams end with it.
func (c *watchedConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.stall)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		c.once.Do(func() {
			c.end(errStalled)
			c.Conn.Close()
		})
		return n, fmt.Errorf("%w for %v: %w", errStalled, c.stall, err)
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.end(errSessionEnded)
	return c.Conn.Close()
}
