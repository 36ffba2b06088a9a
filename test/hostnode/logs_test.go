package hostnode

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock ticks a second on each call.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

var logEpoch = time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)

// writeTestLog writes stdout then stderr of one run, one second per entry.
func writeTestLog(t *testing.T, stdout, stderr string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	lf := newLogFile(f, 2)
	lf.Now = (&fakeClock{t: logEpoch}).Now
	lf.copyStream(strings.NewReader(stdout), "stdout")
	lf.copyStream(strings.NewReader(stderr), "stderr")
	<-lf.Done()
	if err := lf.Err(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLogFileFormat(t *testing.T) {
	long := strings.Repeat("x", maxLogEntry+10)
	path := writeTestLog(t, "one\n\ntwo\n"+long+"\nno newline", "oops\n")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-01-02T15:04:01Z stdout F one\n" +
		"2026-01-02T15:04:02Z stdout F \n" +
		"2026-01-02T15:04:03Z stdout F two\n" +
		"2026-01-02T15:04:04Z stdout P " + long[:maxLogEntry] + "\n" +
		"2026-01-02T15:04:05Z stdout F " + long[maxLogEntry:] + "\n" +
		"2026-01-02T15:04:06Z stdout P no newline\n" +
		"2026-01-02T15:04:07Z stderr F oops\n"
	if string(data) != want {
		t.Errorf("log file:\n%.300s\nwant:\n%.300s", data, want)
	}
}

func readTestLog(t *testing.T, path string, opts logOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := streamLog(context.Background(), path, nil, opts, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestStreamLog(t *testing.T) {
	path := writeTestLog(t, "a\nb\nc\npart", "err\n")
	all := logOptions{Tail: -1}
	for _, tc := range []struct {
		name string
		opts logOptions
		want string
	}{
		{"all", all, "a\nb\nc\nparterr\n"},
		{"tail 1", logOptions{Tail: 1}, "parterr\n"}, // a piece joins the next line
		{"tail 2", logOptions{Tail: 2}, "c\nparterr\n"},
		{"tail 0", logOptions{Tail: 0}, ""},
		{"tail beyond", logOptions{Tail: 99}, "a\nb\nc\nparterr\n"},
		{"since", logOptions{Tail: -1, Since: logEpoch.Add(3 * time.Second)}, "c\nparterr\n"},
		{"timestamps", logOptions{Tail: 1, Timestamps: true}, "2026-01-02T15:04:04Z part2026-01-02T15:04:05Z err\n"},
		{"limit", logOptions{Tail: -1, LimitBytes: 5}, "a\nb\nc"},
	} {
		if got := readTestLog(t, path, tc.opts); got != tc.want {
			t.Errorf("%s: got %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseLogEntryErrors(t *testing.T) {
	for _, line := range []string{"", "2026-01-02T15:04:05Z stdout F", "yesterday stdout F x", "2026-01-02T15:04:05Z stdout X x"} {
		if _, err := parseLogEntry([]byte(line)); err == nil {
			t.Errorf("parseLogEntry(%q) succeeded", line)
		}
	}
}

// TestStreamLogFollow writes to a live log while a follower reads it, and
// checks the follower ends once the run's output ends.
func TestStreamLogFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	lf, stdout, stderr, err := startLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdout, "first\n")
	waitFor(t, "the first line", func() bool { d, _ := os.ReadFile(path); return len(d) > 0 })

	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := streamLog(context.Background(), path, lf.Done(), logOptions{Tail: -1, Follow: true}, pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	br := newLineReader(pr)
	if got := br.line(t); got != "first" {
		t.Errorf("first line %q", got)
	}
	io.WriteString(stderr, "second\n")
	if got := br.line(t); got != "second" {
		t.Errorf("second line %q", got)
	}
	io.WriteString(stdout, "last")
	stdout.Close()
	stderr.Close()
	rest, _ := io.ReadAll(pr)
	if string(rest) != "last" {
		t.Errorf("after the end: %q; want %q", rest, "last")
	}
	if err := <-errc; err != nil {
		t.Errorf("streamLog: %v", err)
	}
}

func TestStreamLogFollowCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	lf, stdout, stderr, err := startLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	defer stdout.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- streamLog(ctx, path, lf.Done(), logOptions{Tail: -1, Follow: true}, io.Discard) }()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("streamLog after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("streamLog did not end with its context")
	}
}

type lineReader struct{ r io.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{r} }

// line reads up to a newline, byte by byte (the pipe has no buffer to lose).
func (l *lineReader) line(t *testing.T) string {
	t.Helper()
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := l.r.Read(one); err != nil {
			t.Fatalf("reading a line: %v (so far %q)", err, b)
		}
		if one[0] == '\n' {
			return string(b)
		}
		b = append(b, one[0])
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
