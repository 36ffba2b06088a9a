package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// A followed log is read from the site once, by one feed per (job,
// container), however many readers follow it: each `kubectl logs -f`
// would otherwise cost the login node an lstat and a dd session per poll,
// and a few hundred of them would stall the status and the submissions of
// the whole node. The feed sends whole lines to its readers; each reader
// keeps its own start, since, timestamps and limit, and a bounded queue.
const (
	// maxIdleFactor bounds the back-off of a feed whose log does not grow:
	// it reads again after the poll interval, doubled at each read that
	// finds nothing up to maxIdleFactor times it (500 ms up to 4 s), and
	// after the poll interval again as soon as the log grows.
	maxIdleFactor = 8
	// maxLag is how many bytes of lines a reader may leave unread behind
	// its feed. A reader further behind (a client that does not read)
	// skips them, and reads a line that says so, instead of holding their
	// memory or slowing the feed and its other readers. The feed reads on
	// while a reader has room for one more read (a chunk and a line held
	// back from the read before), so that its fastest reader never skips.
	maxLag = 2 * (logChunk + maxLine)
)

// followers holds a Client's feeds. The zero value has none.
type followers struct {
	mu    sync.Mutex
	feeds map[feedKey]*logFeed
}

type feedKey struct{ uid, container string }

// follow opens a reader of the followed log of a container, whose file has
// the given size, from offset start on.
func (c *Client) follow(ctx context.Context, ref JobRef, container string, size, start int64, opts LogOptions) (io.ReadCloser, error) {
	r := &feedReader{start: start, wake: make(chan struct{}, 1)}
	key := feedKey{ref.UID, container}
	f, lineOff, ok := c.follows.join(key, r)
	if !ok {
		// A new feed starts at the start of the last line, so that it
		// sends whole lines only.
		file := path.Join(ref.Dir, jobscript.LogFile(container))
		from, err := c.tailStart(ctx, file, size, 1)
		if err != nil {
			return nil, fmt.Errorf("logs of container %s: %w", container, err)
		}
		f, lineOff = c.follows.start(c, key, file, from, r)
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	lc := &logCopy{container: container, file: f.file, opts: opts, w: pw}
	go func() {
		err := r.copy(ctx, c, lc, lineOff)
		f.leave(r)
		pw.CloseWithError(err)
	}()
	return &logStream{PipeReader: pr, cancel: cancel}, nil
}

// join adds r to the running feed of key, if there is one, and returns the
// offset of the next line the feed sends.
func (h *followers) join(key feedKey, r *feedReader) (*logFeed, int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[key]; f != nil {
		if off, ok := f.join(r); ok {
			return f, off, true
		}
	}
	return nil, 0, false
}

// start adds r to the feed of key, starting a feed at offset from if
// none runs (another reader may have started one meanwhile).
func (h *followers) start(c *Client, key feedKey, file string, from int64, r *feedReader) (*logFeed, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[key]; f != nil {
		if off, ok := f.join(r); ok {
			return f, off
		}
	}
	// The feed outlives the request that started it: it stops when its
	// last reader leaves.
	ctx, stop := context.WithCancel(context.Background())
	f := &logFeed{
		c: c, key: key, file: file, stop: stop, end: make(chan struct{}), room: make(chan struct{}, 1),
		lineOff: from, readers: map[*feedReader]struct{}{r: {}},
	}
	r.room = f.room
	if h.feeds == nil {
		h.feeds = map[feedKey]*logFeed{}
	}
	h.feeds[key] = f
	go f.run(ctx, from)
	return f, from
}

// remove forgets f, if it is still the feed of its key.
func (h *followers) remove(f *logFeed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.feeds[f.key] == f {
		delete(h.feeds, f.key)
	}
}

// EndLogs tells the followed logs of the job of uid that their containers
// ended (all of them when containers is empty), as the status poll saw:
// each reads what is left of its log and ends. A follower that starts
// after EndLogs is not ended by it.
func (c *Client) EndLogs(uid string, containers ...string) {
	c.follows.mu.Lock()
	defer c.follows.mu.Unlock()
	for key, f := range c.follows.feeds {
		if key.uid == uid && (len(containers) == 0 || slices.Contains(containers, key.container)) {
			f.endOnce.Do(func() { close(f.end) })
		}
	}
}

// FollowedLogs is how many feeds read followed logs, whatever the number
// of their readers.
func (c *Client) FollowedLogs() int {
	c.follows.mu.Lock()
	defer c.follows.mu.Unlock()
	return len(c.follows.feeds)
}

// logFeed reads one followed log and sends its lines to its readers.
type logFeed struct {
	c       *Client
	key     feedKey
	file    string
	stop    context.CancelFunc // ends run: the last reader left
	end     chan struct{}      // closed by EndLogs
	endOnce sync.Once
	room    chan struct{} // a reader took lines from its queue

	mu      sync.Mutex
	lineOff int64 // the offset of the next line to send
	readers map[*feedReader]struct{}
	closed  bool // no reader may join: the feed ends
}

// feedLine is a line of a followed log and its offset in the file.
type feedLine struct {
	off  int64
	text []byte
}

func (f *logFeed) join(r *feedReader) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, false
	}
	r.room = f.room
	f.readers[r] = struct{}{}
	r.tellRoom() // a feed that waits for its readers' room has some now
	return f.lineOff, true
}

// leave removes r; the feed stops with its last reader.
func (f *logFeed) leave(r *feedReader) {
	f.mu.Lock()
	delete(f.readers, r)
	last := len(f.readers) == 0 && !f.closed
	if last {
		f.closed = true
	}
	f.mu.Unlock()
	if last {
		f.stop()
		f.c.follows.remove(f)
	}
}

// run reads the log from offset off until its container ends, its job
// directory goes, the read fails or the last reader leaves, and then ends
// every reader with what ended it.
func (f *logFeed) run(ctx context.Context, off int64) {
	err := f.read(ctx, off)
	f.c.follows.remove(f)
	f.mu.Lock()
	f.closed = true
	readers := f.readers
	f.readers = nil
	f.mu.Unlock()
	for r := range readers {
		r.finish(err)
	}
	f.stop()
}

func (f *logFeed) read(ctx context.Context, off int64) error {
	poll := f.c.poll()
	idle := poll
	timer := time.NewTimer(idle)
	defer timer.Stop()
	var partial []byte // the start of a line whose newline has not come
	ending := false
	for {
		if !f.wait(ctx) {
			return nil
		}
		data, err := f.c.Site.ReadAt(ctx, f.file, off, logChunk)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, fs.ErrNotExist):
			f.send(nil, partial, true) // the job directory went
			return nil
		case err != nil:
			return fmt.Errorf("read log of container %s: %w", f.key.container, err)
		}
		off += int64(len(data))
		partial = f.send(partial, data, false)
		switch {
		case len(data) == logChunk:
			continue
		case ending:
			f.send(nil, partial, true)
			return nil
		case len(data) > 0:
			idle = poll
		default:
			idle = min(2*idle, maxIdleFactor*poll)
		}
		timer.Reset(idle)
		select {
		case <-ctx.Done():
			return nil
		case <-f.end:
			ending = true // read what was written before the end
		case <-timer.C:
		}
	}
}

// wait waits until a reader has room for one more read, so that the feed
// goes no faster than its fastest reader; it reports whether ctx is still
// live. A reader behind the others does not hold the feed back: it skips.
func (f *logFeed) wait(ctx context.Context) bool {
	for !f.roomy() {
		select {
		case <-ctx.Done():
			return false
		case <-f.room:
		}
	}
	return ctx.Err() == nil
}

// roomy reports whether some reader has room for one more read.
func (f *logFeed) roomy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for r := range f.readers {
		if r.roomy() {
			return true
		}
	}
	return len(f.readers) == 0
}

// send sends the whole lines of partial followed by data (and pieces of
// maxLine of a longer one) to every reader, and returns what is left: the
// start of a line whose newline has not come. With last, that too is sent.
// The lines are shared by the readers: their bytes are never written again.
func (f *logFeed) send(partial, data []byte, last bool) []byte {
	buf := data
	if len(partial) > 0 {
		// partial is the feed's own copy, never sent: the lines may share
		// its array, which is not written again.
		buf = append(partial, data...)
	}
	var lines []feedLine
	f.mu.Lock()
	defer f.mu.Unlock()
	off := f.lineOff
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		switch {
		case i < 0 && len(buf) >= maxLine:
			i = maxLine - 1 // a line too long to hold: pass it on in pieces
		case i < 0 && !last:
			f.lineOff = off
			f.push(lines)
			return slices.Clone(buf) // not to hold the whole read for a line's start
		case i < 0:
			i = len(buf) - 1
		}
		lines = append(lines, feedLine{off: off, text: buf[:i+1]})
		off += int64(i + 1)
		buf = buf[i+1:]
	}
	f.lineOff = off
	f.push(lines)
	return nil
}

// push queues lines for every reader. f.mu is held: a reader that joins
// either gets the lines or starts past them.
func (f *logFeed) push(lines []feedLine) {
	if len(lines) == 0 {
		return
	}
	for r := range f.readers {
		r.push(lines)
	}
}

// feedReader is one reader of a feed.
type feedReader struct {
	start int64         // lines before it are not the reader's
	wake  chan struct{} // a push or the end, since the reader last looked
	room  chan struct{} // the feed's: told when the reader takes lines

	mu     sync.Mutex
	queue  []feedLine
	queued int // bytes in queue
	// taken are the bytes of the lines the reader took last, which its
	// copy may still be writing to a client that does not read: they are
	// held as the queue is, until it takes again.
	taken   int
	skipped int64 // bytes dropped since the reader last looked
	done    bool  // the feed ended: queue is all there is
	err     error // why, if it failed
}

// roomy reports whether r's queue has room for one more read of the feed.
// A reader that skipped has none until it reads again: the feed must not
// go at the pace of a reader that does not read.
func (r *feedReader) roomy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped == 0 && r.taken+r.queued+logChunk+maxLine <= maxLag
}

func (r *feedReader) push(lines []feedLine) {
	n := 0
	for _, l := range lines {
		n += len(l.text)
	}
	r.mu.Lock()
	if r.taken+r.queued+n > maxLag {
		r.skipped += int64(r.queued + n)
		r.queue, r.queued = nil, 0
	} else {
		r.queue = append(r.queue, lines...)
		r.queued += n
	}
	r.mu.Unlock()
	r.signal()
}

// finish ends the reader once it has read its queue.
func (r *feedReader) finish(err error) {
	r.mu.Lock()
	r.done, r.err = true, err
	r.mu.Unlock()
	r.signal()
}

func (r *feedReader) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// tellRoom tells the feed that r has room in its queue.
func (r *feedReader) tellRoom() {
	select {
	case r.room <- struct{}{}:
	default:
	}
}

// take waits for lines, or the feed's end, or ctx's. The reader's copy
// calls it once it wrote the lines it took before: they are no longer held.
func (r *feedReader) take(ctx context.Context) (lines []feedLine, skipped int64, done bool, err error) {
	r.mu.Lock()
	wrote := r.taken > 0
	r.taken = 0
	r.mu.Unlock()
	if wrote {
		r.tellRoom()
	}
	for {
		r.mu.Lock()
		lines, skipped, done, err = r.queue, r.skipped, r.done, r.err
		r.taken = r.queued
		r.queue, r.queued, r.skipped = nil, 0, 0
		r.mu.Unlock()
		if len(lines) > 0 || skipped > 0 || done {
			r.tellRoom()
			return lines, skipped, done, err
		}
		select {
		case <-ctx.Done():
			return nil, 0, true, nil
		case <-r.wake:
		}
	}
}

// copy writes, as lc's options ask, the log from the reader's start up to
// the feed's offset lineOff when it joined (read by itself), and then the
// lines the feed sends, until the feed or ctx ends.
func (r *feedReader) copy(ctx context.Context, c *Client, lc *logCopy, lineOff int64) error {
	if r.start < lineOff {
		err := lc.copy(ctx, c.history(), r.start, lineOff)
		if errors.Is(err, fs.ErrNotExist) {
			return lc.result(lc.flush()) // the job directory went
		}
		if err == nil {
			err = lc.flush()
		}
		if err != nil {
			return r.result(ctx, lc, err)
		}
	}
	for {
		lines, skipped, done, err := r.take(ctx)
		if skipped > 0 {
			if _, err := fmt.Fprintf(lc.w, "sluice: %d bytes of this log skipped: this reader fell more than %d bytes behind\n", skipped, maxLag); err != nil {
				return err
			}
		}
		for _, l := range lines {
			if l.off < r.start {
				continue
			}
			if err := lc.line(l.text); err != nil {
				return r.result(ctx, lc, err)
			}
		}
		if done {
			return r.result(ctx, lc, err)
		}
	}
}

// result is how the stream of a reader whose copy ended with err ends:
// cleanly when its limit was reached or ctx ended.
func (r *feedReader) result(ctx context.Context, lc *logCopy, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return lc.result(err)
}
