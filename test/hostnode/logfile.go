package hostnode

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// A container's log file holds one entry a line, in the format the kubelet
// keeps for CRI runtimes:
//
//	2026-01-02T15:04:05.123456789Z stdout F text of a full line
//	2026-01-02T15:04:05.123456789Z stderr P the start of a long or unfinished line
//
// F ends a line of the output, P is a piece of one (a line longer than
// maxLogEntry, or output that ended without a newline).

// maxLogEntry is the longest text of one log entry.
const maxLogEntry = 16 << 10

// logFile writes one run of a container to its log file. Both output
// streams write to it; Done is closed once both ended and the file is closed.
type logFile struct {
	// Now is the clock. If nil, time.Now.
	Now func() time.Time

	mu   sync.Mutex
	w    io.WriteCloser
	open int // streams still open
	err  error
	done chan struct{}
}

// newLogFile writes to w for the given number of streams.
func newLogFile(w io.WriteCloser, streams int) *logFile {
	return &logFile{w: w, open: streams, done: make(chan struct{})}
}

// Done is closed when every stream ended and the file is closed.
func (l *logFile) Done() <-chan struct{} { return l.done }

// Err is the first write error, once Done is closed.
func (l *logFile) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// copyStream writes r's lines as entries of stream until r ends, then
// marks the stream closed.
func (l *logFile) copyStream(r io.Reader, stream string) {
	br := bufio.NewReaderSize(r, maxLogEntry)
	for {
		line, err := br.ReadSlice('\n')
		if err == nil {
			l.entry(stream, "F", line[:len(line)-1])
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			l.entry(stream, "P", line)
			continue
		}
		if len(line) > 0 {
			l.entry(stream, "P", line)
		}
		break
	}
	l.closeStream()
}

func (l *logFile) entry(stream, tag string, text []byte) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	b := make([]byte, 0, len(text)+64)
	b = now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, text...)
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(b)
	}
}

func (l *logFile) closeStream() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.open > 0 {
		return
	}
	if err := l.w.Close(); l.err == nil {
		l.err = err
	}
	close(l.done)
}

// startLogFile creates the log file at path and returns the write ends to
// give a process as stdout and stderr; the caller closes them once the
// process started.
func startLogFile(path string) (lf *logFile, stdout, stderr *os.File, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o640)
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		f.Close()
		outR.Close()
		outW.Close()
		return nil, nil, nil, err
	}
	lf = newLogFile(f, 2)
	go func() { lf.copyStream(outR, "stdout"); outR.Close() }()
	go func() { lf.copyStream(errR, "stderr"); errR.Close() }()
	return lf, outW, errW, nil
}
