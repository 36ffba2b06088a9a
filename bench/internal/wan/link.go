// Package wan puts a wide-area network between two ends of a benchmark on
// one machine whose kernel has no netem: a TCP relay that releases every
// byte a fixed delay after it arrived, in each direction, and keeps the
// bandwidth of the path.
//
// Each direction of a connection is a line: a reader stamps what it reads
// with the time it is due and queues it at once, and a writer releases it
// when due. The reader never waits for the writer, except when the line
// holds as many bytes as a link of the given rate holds in flight over the
// delay (its bandwidth-delay product): then it stops reading, and TCP's
// flow control slows the sender, as a full path does.
package wan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/pipe"
)

// DefaultRate is the rate a Link keeps if none is given: above what the
// rig moves through one connection on its loopback (about 2 GB/s).
const DefaultRate = 2_000_000_000

const (
	// readSize is the buffer of each read.
	readSize = 64 << 10
	// minHeld is the least a line may hold, whatever its delay and rate,
	// so that a short delay still reads whole buffers ahead.
	minHeld = 4 * readSize
	// smallRead is the size under which a read is copied out of its
	// buffer, so that a line of small reads does not hold a 64 KiB buffer
	// for each: the memory a line holds is then at most twice the bytes
	// it holds, and one buffer more.
	smallRead = readSize / 2
)

// Link is a path between two TCP connections with a one-way delay: what
// Pipe reads from one is written to the other Delay after it arrived, so
// that the round trip grows by twice Delay.
type Link struct {
	// Delay is added to every byte, each way. Zero passes bytes on as
	// they come.
	Delay time.Duration
	// Rate, in bytes a second, is the most one direction of a connection
	// carries: each holds at most Rate × Delay bytes (at least 256 KiB;
	// in memory, at most twice that) and reads no more until some have
	// left. If zero, DefaultRate.
	Rate int64
}

// limit is the most one direction holds, in bytes.
func (l Link) limit() int {
	rate := l.Rate
	if rate <= 0 {
		rate = DefaultRate
	}
	bdp := float64(rate) * l.Delay.Seconds()
	if bdp < minHeld {
		return minHeld
	}
	if bdp > 1<<40 {
		return 1 << 40
	}
	return int(bdp)
}

// Pipe passes bytes between a and b both ways, each delayed, until both
// directions have ended (EOF passed on as a half-close, Delay after it
// came) or one fails or ctx ends; it closes a and b before it returns. The
// error names the direction that failed; ctx's end is not an error.
func (l Link) Pipe(ctx context.Context, a, b net.Conn) error {
	if l.Delay == 0 {
		_, err := pipe.Relay(ctx, a, b, a.RemoteAddr().String(), b.RemoteAddr().String(), nil)
		a.Close()
		b.Close()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closeBoth := func() {
		a.Close()
		b.Close()
	}
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	errc := make(chan error, 2)
	there := fmt.Sprintf("%s → %s", a.RemoteAddr(), b.RemoteAddr())
	back := fmt.Sprintf("%s → %s", b.RemoteAddr(), a.RemoteAddr())
	go func() { errc <- l.pass(ctx, b, a, there) }()
	go func() { errc <- l.pass(ctx, a, b, back) }()
	var errs []error
	for range 2 {
		err := <-errc
		switch {
		case err == nil || ctx.Err() != nil && (len(errs) == 0 || errors.Is(err, net.ErrClosed)):
			// Ended well; or ctx ended; or closed because the other
			// direction failed, which says why.
		default:
			errs = append(errs, err)
			// One direction failed: the other cannot go on alone.
			cancel()
		}
	}
	closeBoth()
	return errors.Join(errs...)
}

// pass carries one direction, src to dst, until src's end has been passed
// on, or a failure; it closes src if the write side failed, so that the
// reader stops.
func (l Link) pass(ctx context.Context, dst, src net.Conn, dir string) error {
	ln := newLine(l.limit())
	read := make(chan struct{})
	go func() {
		defer close(read)
		ln.fill(ctx, src, l.Delay)
	}()
	err := ln.drain(ctx, dst)
	if err != nil {
		ln.abandon()
		src.Close()
	}
	<-read
	if err != nil {
		return fmt.Errorf("wan: %s: %w", dir, err)
	}
	return nil
}

// chunk is one read: its bytes, or the end of the stream, and when it is
// due at the other side.
type chunk struct {
	due    time.Time
	data   []byte
	pooled *[]byte // data's buffer, to give back once written; nil if data is a copy
	end    error   // set on the last chunk: io.EOF or the read's error
}

// held is the bytes a chunk keeps until it is written, what a line's limit
// counts.
func (c chunk) held() int {
	return len(c.data)
}

var buffers = sync.Pool{New: func() any {
	b := make([]byte, readSize)
	return &b
}}

// line is one direction's queue: fill adds, drain takes.
type line struct {
	limit int

	mu        sync.Mutex
	q         []chunk
	held      int
	abandoned bool // the writer has gone: fill stops

	room chan struct{} // a token when held fell or the writer left
	more chan struct{} // a token when a chunk was queued
}

func newLine(limit int) *line {
	return &line{limit: limit, room: make(chan struct{}, 1), more: make(chan struct{}, 1)}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// fill reads src until its end or an error, queueing every read due delay
// after it arrived, and the end last. It waits while the line is full.
func (ln *line) fill(ctx context.Context, src net.Conn, delay time.Duration) {
	for {
		if !ln.waitRoom(ctx) {
			return
		}
		buf := buffers.Get().(*[]byte)
		n, err := src.Read(*buf)
		due := time.Now().Add(delay)
		switch {
		case n == 0:
			buffers.Put(buf)
		case n < smallRead:
			data := append([]byte(nil), (*buf)[:n]...)
			buffers.Put(buf)
			ln.push(chunk{due: due, data: data})
		default:
			ln.push(chunk{due: due, data: (*buf)[:n], pooled: buf})
		}
		if err != nil {
			ln.push(chunk{due: due, end: err})
			return
		}
	}
}

// waitRoom waits until another read fits in the line; false if the writer
// has gone or ctx ended.
func (ln *line) waitRoom(ctx context.Context) bool {
	for {
		ln.mu.Lock()
		full, gone := ln.held+readSize > ln.limit, ln.abandoned
		ln.mu.Unlock()
		switch {
		case gone:
			return false
		case !full:
			return true
		}
		select {
		case <-ln.room:
		case <-ctx.Done():
			return false
		}
	}
}

func (ln *line) push(c chunk) {
	ln.mu.Lock()
	ln.q = append(ln.q, c)
	ln.held += c.held()
	ln.mu.Unlock()
	notify(ln.more)
}

// abandon tells fill to stop and gives back what the line holds.
func (ln *line) abandon() {
	ln.mu.Lock()
	ln.abandoned = true
	for _, c := range ln.q {
		if c.pooled != nil {
			buffers.Put(c.pooled)
		}
	}
	ln.q, ln.held = nil, 0
	ln.mu.Unlock()
	notify(ln.room)
}

// drain writes every chunk to dst when it is due, those due together in
// one write, until the end of the stream, which it passes on as a
// half-close (or returns, if it was an error).
func (ln *line) drain(ctx context.Context, dst net.Conn) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var out net.Buffers
	for {
		head, ok := ln.first()
		if !ok {
			select {
			case <-ln.more:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if wait := time.Until(head.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		batch := ln.takeDue(time.Now())
		out = out[:0]
		var end error
		for _, c := range batch {
			if c.end != nil {
				end = c.end
				break
			}
			out = append(out, c.data)
		}
		_, err := out.WriteTo(dst)
		ln.release(batch)
		switch {
		case err != nil:
			return fmt.Errorf("write: %w", err)
		case end == io.EOF:
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				if err := cw.CloseWrite(); err != nil {
					return fmt.Errorf("half-close: %w", err)
				}
			}
			return nil
		case end != nil:
			return fmt.Errorf("read: %w", end)
		}
	}
}

// first returns the chunk at the head of the line, if any.
func (ln *line) first() (chunk, bool) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if len(ln.q) == 0 {
		return chunk{}, false
	}
	return ln.q[0], true
}

// maxBatch bounds the chunks of one write.
const maxBatch = 64

// takeDue takes the chunks due by now from the head of the line, up to
// and including an end.
func (ln *line) takeDue(now time.Time) []chunk {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	n := 0
	for n < len(ln.q) && n < maxBatch && !ln.q[n].due.After(now) {
		n++
		if ln.q[n-1].end != nil {
			break
		}
	}
	batch := append([]chunk(nil), ln.q[:n]...)
	clear(ln.q[:n])
	ln.q = ln.q[n:]
	return batch
}

// release gives back what a written batch held, and makes room.
func (ln *line) release(batch []chunk) {
	freed := 0
	for _, c := range batch {
		freed += c.held()
		if c.pooled != nil {
			buffers.Put(c.pooled)
		}
	}
	ln.mu.Lock()
	ln.held -= freed
	ln.mu.Unlock()
	notify(ln.room)
}
