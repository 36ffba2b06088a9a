package kubeletstream

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// maxReadAhead bounds what a stream waiting for its carrier may send
// before the carrier takes it, and what is held of a carried stream the
// carrier has not written on yet: a request's worth, kept small because
// a client may open many streams at once (64 KiB × 1,000 streams is
// 64 MiB of sluice-vk's memory at the most).
const maxReadAhead = 64 << 10

// readAhead reads a port-forward stream from the moment its handler is
// called, into a buffer of at most max bytes, so that the stream is read
// while it waits for one of the srun carrier's slots. It has to be:
// spdystream hands each stream's data over in one of a few workers shared
// by all the connection's streams, so a stream nobody reads stalls the
// others' data, and with it the carried streams that hold the slots, which
// wait for their clients' requests.
//
// Before start is called, a stream that sends more than max bytes fails
// (what it sends next is read and dropped, so that it stalls nothing); after,
// a full buffer makes the reading wait, which is the carrier's back
// pressure. Close closes the stream and ends a Read waiting on it.
type readAhead struct {
	rwc io.ReadWriteCloser
	max int

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	err     error // the stream's read error, io.EOF at its end
	over    bool  // it sent more than max before start
	started bool
	closed  bool
	full    chan struct{} // closed when over is set
	last    atomic.Int64  // when the stream last carried bytes either way, in Unix nanoseconds
}

// errReadAheadFull is the error of a stream that sent more than
// maxReadAhead bytes before its carrier took it.
var errReadAheadFull = fmt.Errorf("the stream sent more than %d bytes while it waited for a carrier", maxReadAhead)

func newReadAhead(rwc io.ReadWriteCloser, max int) *readAhead {
	r := &readAhead{rwc: rwc, max: max, full: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	r.touch()
	go r.fill()
	return r
}

// fill reads the stream until it ends.
func (r *readAhead) fill() {
	b := make([]byte, 32<<10)
	for {
		n, err := r.rwc.Read(b)
		if n > 0 {
			r.touch()
		}
		r.mu.Lock()
		for r.started && !r.closed && len(r.buf)+n > r.max {
			r.cond.Wait()
		}
		switch {
		case r.closed, r.over:
		case !r.started && len(r.buf)+n > r.max:
			r.over, r.buf = true, nil
			close(r.full)
		default:
			r.buf = append(r.buf, b[:n]...)
		}
		if err != nil {
			r.err = err
		}
		r.cond.Broadcast()
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// start tells that the carrier took the stream: from now on a full
// buffer waits for Read.
func (r *readAhead) start() {
	r.mu.Lock()
	r.started = true
	r.mu.Unlock()
}

// overflow is closed when the stream sent more than max bytes before start.
func (r *readAhead) overflow() <-chan struct{} { return r.full }

func (r *readAhead) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.buf) == 0 && r.err == nil && !r.over && !r.closed {
		r.cond.Wait()
	}
	switch {
	case r.closed:
		return 0, net.ErrClosed
	case r.over:
		return 0, errReadAheadFull
	case len(r.buf) > 0:
		n := copy(p, r.buf)
		r.buf = r.buf[n:]
		if len(r.buf) == 0 {
			r.buf = nil // the next append starts afresh
		}
		r.cond.Broadcast()
		return n, nil
	}
	return 0, r.err
}

func (r *readAhead) Write(p []byte) (int, error) {
	n, err := r.rwc.Write(p)
	if n > 0 {
		r.touch()
	}
	return n, err
}

func (r *readAhead) touch() { r.last.Store(time.Now().UnixNano()) }

// lastActive is when the stream last carried bytes either way (or was
// opened).
func (r *readAhead) lastActive() time.Time { return time.Unix(0, r.last.Load()) }

// CloseWrite closes the stream, which for SPDY and websocket streams ends
// its write side only: what the client sends is still read.
func (r *readAhead) CloseWrite() error {
	if err := r.rwc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Close closes the stream as CloseWrite does and ends a Read waiting on
// it; the stream is still read, and what comes dropped, until its far side
// ends it.
func (r *readAhead) Close() error {
	r.mu.Lock()
	r.closed, r.buf = true, nil
	r.cond.Broadcast()
	r.mu.Unlock()
	return r.CloseWrite()
}
