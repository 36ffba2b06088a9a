package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
)

// LogOptions shape what Logs returns, as kubectl logs asks.
type LogOptions struct {
	// Tail is how many lines from the end to return; negative returns all.
	Tail int
	// Since leaves out lines stamped before it. Zero keeps them all.
	Since time.Time
	// Timestamps starts each line with its RFC 3339 time, as kubelet does.
	Timestamps bool
	// LimitBytes ends the output after that many bytes. Zero is no limit.
	LimitBytes int64
	// Follow keeps reading as the container writes, until EndLogs says it
	// ended (the caller's status poll saw it: Logs asks Slurm nothing), the
	// job directory goes, or ctx ends. The followers of one container
	// share one reading of its log (see follow).
	Follow bool
}

// Reads of a log file.
const (
	// logChunk is how much one read of a log asks for.
	logChunk = 1 << 20
	// tailChunk is how much Tail reads at a time, backwards from the end.
	tailChunk = 64 << 10
	// maxTailScan is how far back from the end Tail looks for its lines: a
	// log of a few huge lines gives the end of the last of them instead of
	// a read of the whole file.
	maxTailScan = 8 << 20
	// maxLine is the longest line held back waiting for its newline.
	maxLine = 1 << 20
)

// Logs streams the output of a container of the job of ref. A container
// that has not started (no log yet) is an error. Lines on disk carry their
// time; it is removed unless opts.Timestamps. Closing the reader, or ending
// ctx, stops the stream; for a followed log that is a clean end of file. A
// log that is not a regular file (the container may replace it with a named
// pipe or a link) is refused with an error wrapping site.ErrNotRegular.
// A followed log ends once EndLogs is called for its container.
func (c *Client) Logs(ctx context.Context, ref JobRef, container string, opts LogOptions) (io.ReadCloser, error) {
	if err := c.checkRef(ref); err != nil {
		return nil, err
	}
	if err := jobscript.CheckContainerName(container); err != nil {
		return nil, err
	}
	file := path.Join(ref.Dir, jobscript.LogFile(container))
	fi, err := c.Site.Stat(ctx, file)
	if err == nil {
		err = site.CheckRegular(fi)
	}
	if err != nil {
		return nil, fmt.Errorf("logs of container %s: %s: %w", container, jobscript.LogFile(container), err)
	}
	var start int64
	if opts.Tail >= 0 {
		if start, err = c.tailStart(ctx, file, fi.Size(), opts.Tail); err != nil {
			return nil, fmt.Errorf("logs of container %s: %w", container, err)
		}
	}
	if opts.Follow {
		return c.follow(ctx, ref, container, fi.Size(), start, opts)
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	lc := &logCopy{container: container, file: file, opts: opts, w: pw}
	go func() {
		pw.CloseWithError(lc.run(ctx, c.history(), start))
	}()
	return &logStream{PipeReader: pr, cancel: cancel}, nil
}

// logStream is the reader Logs returns; closing it stops its copier.
type logStream struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (s *logStream) Close() error {
	s.cancel()
	return s.PipeReader.Close()
}

// tailStart is the offset of the n-th line from the end of a file of the
// given size, found reading backwards in chunks, at most maxTailScan bytes
// back. A last line without its newline counts as a line.
func (c *Client) tailStart(ctx context.Context, file string, size int64, n int) (int64, error) {
	if n == 0 {
		return size, nil
	}
	floor := max(0, size-maxTailScan)
	for hi := size; hi > floor; {
		lo := max(floor, hi-tailChunk)
		data, err := c.history().ReadAt(ctx, file, lo, int(hi-lo))
		if err != nil {
			return 0, err
		}
		for i := len(data) - 1; i >= 0; i-- {
			if data[i] != '\n' || lo+int64(i) == size-1 {
				continue // the newline that ends the file ends the last line
			}
			if n--; n == 0 {
				return lo + int64(i) + 1, nil
			}
		}
		hi = lo
	}
	return floor, nil
}

// logCopy copies one log file to w, line by line, as opts ask. A
// followed log's reader uses one for what precedes its feed, and for the
// lines the feed then sends it.
type logCopy struct {
	container string
	file      string
	opts      LogOptions
	w         io.Writer

	partial []byte    // the start of a line whose newline has not come yet
	last    time.Time // the time of the last stamped line
	written int64
}

// errLimit ends a copy that reached LimitBytes.
var errLimit = errors.New("log limit reached")

// run copies from offset off to the end of the file.
func (l *logCopy) run(ctx context.Context, s site.Runner, off int64) error {
	if err := l.copy(ctx, s, off, -1); err != nil {
		return l.result(err)
	}
	return l.result(l.flush())
}

// result is how a copy that ended with err ends its stream: a copy that
// reached its limit ends cleanly.
func (l *logCopy) result(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

// copy copies the lines of the file from offset off up to offset end, or
// to the end of the file if end is negative. A line cut at end is held
// back (flush writes it).
func (l *logCopy) copy(ctx context.Context, s site.Runner, off, end int64) error {
	for end < 0 || off < end {
		n := logChunk
		if end >= 0 {
			n = int(min(int64(n), end-off))
		}
		data, err := s.ReadAt(ctx, l.file, off, n)
		if err != nil {
			return fmt.Errorf("read log of container %s: %w", l.container, err)
		}
		off += int64(len(data))
		if err := l.feed(data); err != nil {
			return err
		}
		if len(data) < n {
			return nil
		}
	}
	return nil
}

// feed takes the next bytes of the file and writes out the lines they end.
func (l *logCopy) feed(data []byte) error {
	l.partial = append(l.partial, data...)
	rest := l.partial
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 && len(rest) >= maxLine {
			i = maxLine - 1 // a line too long to hold: pass it on in pieces
		}
		if i < 0 {
			break
		}
		if err := l.line(rest[:i+1]); err != nil {
			return err
		}
		rest = rest[i+1:]
	}
	l.partial = append(l.partial[:0], rest...)
	return nil
}

// flush writes out a last line that has no newline.
func (l *logCopy) flush() error {
	if len(l.partial) == 0 {
		return nil
	}
	err := l.line(l.partial)
	l.partial = l.partial[:0]
	return err
}

// line writes one line (with its newline, if it has one) as opts ask.
func (l *logCopy) line(b []byte) error {
	t, text, ok := splitStamp(b)
	if ok {
		l.last = t
	} else {
		t, text = l.last, b
	}
	if !l.opts.Since.IsZero() && !t.IsZero() && t.Before(l.opts.Since) {
		return nil
	}
	out := text
	if l.opts.Timestamps && !t.IsZero() {
		out = append([]byte(t.Format(time.RFC3339Nano)+" "), text...)
	}
	if l.opts.LimitBytes > 0 && l.written+int64(len(out)) >= l.opts.LimitBytes {
		out = out[:l.opts.LimitBytes-l.written]
		if _, err := l.w.Write(out); err != nil {
			return err
		}
		return errLimit
	}
	n, err := l.w.Write(out)
	l.written += int64(n)
	return err
}

// splitStamp splits a log line into its time and its text.
func splitStamp(b []byte) (time.Time, []byte, bool) {
	const n = len(jobscript.LogTimeLayout)
	if len(b) < n {
		return time.Time{}, nil, false
	}
	t, err := time.Parse(jobscript.LogTimeLayout, string(b[:n]))
	if err != nil {
		return time.Time{}, nil, false
	}
	switch {
	case len(b) > n && b[n] == ' ':
		return t, b[n+1:], true
	case len(b) == n || b[n] == '\n':
		return t, b[n:], true
	}
	return time.Time{}, nil, false
}
