package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"
)

const sampleLog = "2026-01-02T03:04:01Z one\n" +
	"2026-01-02T03:04:02Z two\n" +
	"continued without a stamp\n" +
	"2026-01-02T03:04:03Z\n" +
	"2026-01-02T03:04:04Z four"

func readLogs(t *testing.T, c *Client, ref JobRef, opts LogOptions) string {
	t.Helper()
	r, err := c.Logs(context.Background(), ref, "main", opts)
	if err != nil {
		t.Fatalf("Logs(%+v): %v", opts, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading logs (%+v): %v", opts, err)
	}
	return string(b)
}

func TestLogs(t *testing.T) {
	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all", LogOptions{Tail: -1}, "one\ntwo\ncontinued without a stamp\n\nfour"},
		{"timestamps", LogOptions{Tail: -1, Timestamps: true},
			"2026-01-02T03:04:01Z one\n2026-01-02T03:04:02Z two\n2026-01-02T03:04:02Z continued without a stamp\n" +
				"2026-01-02T03:04:03Z \n2026-01-02T03:04:04Z four"},
		{"tail 2", LogOptions{Tail: 2}, "\nfour"},
		{"tail 3", LogOptions{Tail: 3}, "continued without a stamp\n\nfour"},
		{"tail 0", LogOptions{Tail: 0}, ""},
		{"tail past the start", LogOptions{Tail: 50}, "one\ntwo\ncontinued without a stamp\n\nfour"},
		{"since", LogOptions{Tail: -1, Since: time.Date(2026, 1, 2, 3, 4, 2, 0, time.UTC)},
			"two\ncontinued without a stamp\n\nfour"},
		{"since later", LogOptions{Tail: -1, Since: time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC)}, "four"},
		{"limit", LogOptions{Tail: -1, LimitBytes: 6}, "one\ntw"},
		{"limit on a line end", LogOptions{Tail: -1, LimitBytes: 4}, "one\n"},
	}
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", sampleLog)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readLogs(t, c, ref, tt.opts); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}

	f.put(ref.Dir+"/main.log", strings.TrimSuffix(sampleLog, " four")+" four\n")
	if got, want := readLogs(t, c, ref, LogOptions{Tail: 1}), "four\n"; got != want {
		t.Errorf("tail 1 of a file ending in a newline: got %q; want %q", got, want)
	}
}

func TestLogsTailReadsFromTheEnd(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	var b strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&b, "2026-01-02T03:04:05Z line %d\n", i)
	}
	size := int64(b.Len())
	f.put(ref.Dir+"/main.log", b.String())
	if got, want := readLogs(t, c, ref, LogOptions{Tail: 2}), "line 99998\nline 99999\n"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
	var read int64
	for _, r := range f.reads {
		if r.off < size-2*tailChunk {
			t.Errorf("read at %d of a %d-byte file for two lines", r.off, size)
		}
		read += int64(r.n)
	}
	if read > 2*tailChunk+2*logChunk {
		t.Errorf("read %d bytes for two lines", read)
	}
}

func TestLogsLongLine(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	long := strings.Repeat("x", 3*maxLine+5)
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:05Z "+long+"\nend\n")
	if got, want := readLogs(t, c, ref, LogOptions{Tail: -1}), long+"\nend\n"; got != want {
		t.Errorf("a long line came back as %d bytes; want %d", len(got), len(want))
	}
}

func TestLogsOfAContainerNotStarted(t *testing.T) {
	c, _, _ := newTestClient(t)
	_, err := c.Logs(context.Background(), c.Ref("lab", sampleUID, "5"), "main", LogOptions{Tail: -1})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Logs = %v; want a not-exist error", err)
	}
	if _, err := c.Logs(context.Background(), c.Ref("lab", sampleUID, "5"), "../x", LogOptions{}); err == nil {
		t.Errorf("Logs of container ../x: got no error")
	}
}

func TestLogsFollow(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref, lines := followFirst(t, c, f)
	expect := func(want string) {
		t.Helper()
		expectLine(t, "the follower", lines, want)
	}
	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:02Z sec")
	f.appendTo(ref.Dir+"/main.log", "ond\n")
	expect("second\n")
	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:03Z last, no newline")
	f.put(ref.Dir+"/main.exit", "0\n")
	c.EndLogs(sampleUID, "main") // the status poll saw the exit file
	rest, err := io.ReadAll(lines)
	if err != nil || string(rest) != "last, no newline" {
		t.Errorf("after EndLogs: read %q, %v; want the last line and EOF", rest, err)
	}
	if n := f.count("squeue"); n != 0 {
		t.Errorf("a followed log ran squeue %d times; want none (the status poll says when it ends)", n)
	}
}

func TestLogsFollowEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(c *Client, f *fakeSite, ref JobRef)
	}{
		{"the job ended", func(c *Client, _ *fakeSite, ref JobRef) { c.EndLogs(ref.UID) }},
		{"the container ended", func(c *Client, _ *fakeSite, ref JobRef) { c.EndLogs(ref.UID, "other", "main") }},
		{"directory removed", func(_ *Client, f *fakeSite, ref JobRef) { _ = f.RemoveAll(context.Background(), ref.Dir) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			ref := c.Ref("lab", sampleUID, "5")
			f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
			r, err := c.Logs(context.Background(), ref, "main", LogOptions{Tail: -1, Follow: true})
			if err != nil {
				t.Fatalf("Logs: %v", err)
			}
			defer r.Close()
			first := make([]byte, len("first\n"))
			if _, err := io.ReadFull(r, first); err != nil {
				t.Fatalf("reading the first line: %v", err)
			}
			c.EndLogs(ref.UID, "other") // another container's end ends nothing here
			tt.end(c, f, ref)
			done := make(chan error, 1)
			go func() { _, err := io.ReadAll(r); done <- err }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("follow ended with %v; want EOF", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("follow did not end")
			}
		})
	}
}

func TestLogsFollowStopsWithTheContext(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	f.handle = (&slurmFake{squeue: "5|RUNNING|None|node1|1|NONE|" + sampleUID + "\n"}).handle
	ctx, cancel := context.WithCancel(context.Background())
	r, err := c.Logs(ctx, ref, "main", LogOptions{Tail: -1, Follow: true})
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer r.Close()
	first := make([]byte, len("first\n"))
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatalf("reading the first line: %v", err)
	}
	cancel()
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after cancel: read %q, %v; want a clean EOF", rest, err)
	}
}

// TestLogsFollowBacksOffWhileIdle: a followed log that does not grow is
// read less and less often, up to maxIdleFactor poll intervals apart, and
// at the poll interval again as soon as it grows.
func TestLogsFollowBacksOffWhileIdle(t *testing.T) {
	c, f, _ := newTestClient(t)
	c.PollInterval = 5 * time.Millisecond
	ref, lines := followFirst(t, c, f)
	before := f.readCount()
	time.Sleep(time.Second)
	// Without a back-off, 200 reads; with it, the intervals double from
	// 5 ms to 40 ms: 4 reads to get there and then 25 a second.
	if n := f.readCount() - before; n > 40 {
		t.Errorf("%d reads of an idle log in a second at a 5 ms poll interval; want at most 40", n)
	}
	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:02Z second\n")
	start := time.Now()
	if got, err := lines.ReadString('\n'); err != nil || got != "second\n" {
		t.Fatalf("read %q, %v; want the second line", got, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a line written to an idle log came %v later", d)
	}
}
