package hostnode

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// logOptions are what `kubectl logs` asks of one container run's log.
type logOptions struct {
	// Tail is the number of last lines; negative for all.
	Tail int
	// Since drops the lines written before it, if set.
	Since time.Time
	// Timestamps prefixes each line with its time.
	Timestamps bool
	// Follow keeps writing new lines until the run's output ends.
	Follow bool
	// LimitBytes stops after that many bytes, if positive.
	LimitBytes int64
}

// logEntry is one line of a log file.
type logEntry struct {
	Time    time.Time
	Stream  string
	Partial bool
	Text    []byte
}

// parseLogEntry reads one line of a log file (without its newline).
func parseLogEntry(line []byte) (logEntry, error) {
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) != 4 {
		return logEntry{}, fmt.Errorf("log entry %q: want TIME STREAM TAG TEXT", line)
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return logEntry{}, fmt.Errorf("log entry %q: %w", line, err)
	}
	tag := string(fields[2])
	if tag != "F" && tag != "P" {
		return logEntry{}, fmt.Errorf("log entry %q: tag %q is neither F nor P", line, tag)
	}
	return logEntry{Time: t, Stream: string(fields[1]), Partial: tag == "P", Text: fields[3]}, nil
}

// tailEntries keeps the entries of the last n lines (a line is a run of
// partial entries and the full entry that ends it); n < 0 keeps all.
func tailEntries(es []logEntry, n int) []logEntry {
	if n < 0 {
		return es
	}
	lines := 0
	for i := len(es) - 1; i >= 0; i-- {
		if !es[i].Partial || i == len(es)-1 {
			if lines == n {
				return es[i+1:]
			}
			lines++
		}
	}
	return es
}

// errLogLimit ends a stream that reached LimitBytes.
var errLogLimit = errors.New("log limit reached")

// logWriter writes entries as the user reads them.
type logWriter struct {
	w    io.Writer
	opts logOptions
	sent int64
}

func (lw *logWriter) write(e logEntry) error {
	if !lw.opts.Since.IsZero() && e.Time.Before(lw.opts.Since) {
		return nil
	}
	var b []byte
	if lw.opts.Timestamps {
		b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
	}
	b = append(b, e.Text...)
	if !e.Partial {
		b = append(b, '\n')
	}
	if lw.opts.LimitBytes > 0 && lw.sent+int64(len(b)) > lw.opts.LimitBytes {
		b = b[:lw.opts.LimitBytes-lw.sent]
		if _, err := lw.w.Write(b); err != nil {
			return err
		}
		return errLogLimit
	}
	lw.sent += int64(len(b))
	_, err := lw.w.Write(b)
	return err
}

// logPollInterval is how often a followed log is checked for new lines.
const logPollInterval = 100 * time.Millisecond

// streamLog writes the log file at path to w as opts ask. With Follow it
// goes on writing new lines until done is closed (the run's output ended)
// and the file is read to its end, or until ctx ends.
func streamLog(ctx context.Context, path string, done <-chan struct{}, opts logOptions, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("log %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	lw := &logWriter{w: w, opts: opts}

	var entries []logEntry
	var pending []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			pending = line
			break
		}
		if e, err := parseLogEntry(line[:len(line)-1]); err == nil {
			entries = append(entries, e)
		}
	}
	for _, e := range tailEntries(entries, opts.Tail) {
		if err := lw.write(e); err != nil {
			return ignoreLimit(err)
		}
	}
	if !opts.Follow {
		return nil
	}

	tick := time.NewTicker(logPollInterval)
	defer tick.Stop()
	finishing := false
	for {
		line, err := br.ReadBytes('\n')
		pending = append(pending, line...)
		if err == nil {
			if e, perr := parseLogEntry(pending[:len(pending)-1]); perr == nil {
				if err := lw.write(e); err != nil {
					return ignoreLimit(err)
				}
			}
			pending = pending[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("log %s: %w", path, err)
		}
		if finishing {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			finishing = true // read what the last writes left, then stop
		case <-tick.C:
		}
	}
}

func ignoreLimit(err error) error {
	if errors.Is(err, errLogLimit) {
		return nil
	}
	return err
}
