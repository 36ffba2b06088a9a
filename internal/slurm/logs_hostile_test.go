package slurm

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// TestLogsRefuseWhatIsNotARegularFile: a container that replaces its log
// with a named pipe or a link gets an error saying so, not a read.
func TestLogsRefuseWhatIsNotARegularFile(t *testing.T) {
	for _, tt := range []struct {
		typ  fs.FileMode
		opts LogOptions
	}{
		{fs.ModeNamedPipe, LogOptions{Tail: -1}},
		{fs.ModeSymlink, LogOptions{Tail: -1}},
		{fs.ModeSymlink, LogOptions{Tail: 10, Follow: true}},
	} {
		c, f, _ := newTestClient(t)
		ref := c.Ref("lab", sampleUID, "5")
		f.special(ref.Dir+"/main.log", tt.typ)
		r, err := c.Logs(context.Background(), ref, "main", tt.opts)
		if !errors.Is(err, site.ErrNotRegular) || !strings.Contains(err.Error(), "main.log") {
			t.Errorf("Logs(%+v) of a main.log of type %v = %v; want ErrNotRegular naming main.log", tt.opts, tt.typ, err)
		}
		if r != nil {
			r.Close()
		}
		if len(f.reads) != 0 {
			t.Errorf("Logs of a main.log of type %v read it %d times", tt.typ, len(f.reads))
		}
	}
}

// TestLogsFollowEndsWhenTheLogIsSwapped: a followed log replaced by a named
// pipe ends the stream with an error, instead of blocking or retrying.
func TestLogsFollowEndsWhenTheLogIsSwapped(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref, lines := followFirst(t, c, f)
	f.special(ref.Dir+"/main.log", fs.ModeNamedPipe)
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(lines); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, site.ErrNotRegular) {
			t.Errorf("follow of a swapped log ended with %v; want ErrNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow of a swapped log did not end")
	}
}

// TestLogsTailOfHugeLinesIsBounded: the last lines of a log made of a few
// huge lines are looked for no further back than maxTailScan.
func TestLogsTailOfHugeLinesIsBounded(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	size := 3 * maxTailScan
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z "+strings.Repeat("z", size)+"\n")
	r, err := c.Logs(context.Background(), ref, "main", LogOptions{Tail: 2})
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || len(got) != maxTailScan || strings.Trim(string(got), "z") != "\n" {
		t.Errorf("tail 2 of one %d-byte line = %d bytes, %v; want its last %d bytes", size, len(got), err, maxTailScan)
	}
	if read := f.bytesRead(); read > 2*maxTailScan+logChunk {
		t.Errorf("read %d bytes of the log; want about %d", read, 2*maxTailScan)
	}
}
