package slurm

import (
	"bufio"
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
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	f.handle = (&slurmFake{squeue: "5|RUNNING|None|node1|1|NONE|" + sampleUID + "\n"}).handle
	r, err := c.Logs(context.Background(), ref, "main", LogOptions{Tail: -1, Follow: true})
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer r.Close()
	lines := bufio.NewReader(r)
	expect := func(want string) {
		t.Helper()
		got, err := lines.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	expect("first\n")
	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:02Z sec")
	f.appendTo(ref.Dir+"/main.log", "ond\n")
	expect("second\n")
	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:03Z last, no newline")
	f.put(ref.Dir+"/main.exit", "0\n")
	rest, err := io.ReadAll(lines)
	if err != nil || string(rest) != "last, no newline" {
		t.Errorf("after the exit file: read %q, %v; want the last line and EOF", rest, err)
	}
}

func TestLogsFollowEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(f *fakeSite, ref JobRef, sf *slurmFake)
	}{
		{"job.exit", func(f *fakeSite, ref JobRef, _ *slurmFake) { f.put(ref.Dir+"/job.exit", "143\n") }},
		{"directory removed", func(f *fakeSite, ref JobRef, _ *slurmFake) { _ = f.RemoveAll(context.Background(), ref.Dir) }},
		{"slurm says cancelled", func(f *fakeSite, ref JobRef, sf *slurmFake) {
			sf.setQueue("5|CANCELLED|None|node1|1|2|" + sampleUID + "\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			c.Now = (&fakeClock{step: slurmCheck}).Now
			ref := c.Ref("lab", sampleUID, "5")
			f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
			sf := &slurmFake{squeue: "5|RUNNING|None|node1|1|NONE|" + sampleUID + "\n"}
			f.handle = sf.handle
			r, err := c.Logs(context.Background(), ref, "main", LogOptions{Tail: -1, Follow: true})
			if err != nil {
				t.Fatalf("Logs: %v", err)
			}
			defer r.Close()
			first := make([]byte, len("first\n"))
			if _, err := io.ReadFull(r, first); err != nil {
				t.Fatalf("reading the first line: %v", err)
			}
			tt.end(f, ref, sf)
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
