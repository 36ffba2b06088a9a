package slurm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/site"
)

func TestLastSluiceLine(t *testing.T) {
	for _, tt := range []struct{ name, out, want string }{
		{"none", "hello\nworld\n", ""},
		{"empty", "", ""},
		{"one", "starting\nsluice: reverse tunnel: the SOCKS proxy on port 1080 listens on every address\n", "reverse tunnel: the SOCKS proxy on port 1080 listens on every address"},
		{"last wins", "sluice: first\nother\nsluice: second\n", "second"},
		{"no newline", "sluice: cut", "cut"},
		{"control bytes", "sluice: a\x1b[31mred\x07\r\n", "a[31mred"},
		{"not at start", "  sluice: indented\n", ""},
	} {
		if got := lastSluiceLine([]byte(tt.out)); got != tt.want {
			t.Errorf("%s: %q; want %q", tt.name, got, tt.want)
		}
	}
	long := lastSluiceLine([]byte("sluice: " + strings.Repeat("é", 2000) + "\n"))
	if len(long) > maxFailureMessage+len("…") || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") {
		t.Errorf("long message: %d bytes", len(long))
	}
}

func FuzzLastSluiceLine(f *testing.F) {
	f.Add([]byte("sluice: x\n"))
	f.Add([]byte("a\nsluice: \xff\xfe\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		got := lastSluiceLine(out)
		if len(got) > maxFailureMessage+len("…") || strings.ContainsAny(got, "\n\r\x00") {
			t.Errorf("lastSluiceLine = %q", got)
		}
	})
}

func TestFailureMessageReadsOnlyTheTail(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	var out strings.Builder
	out.WriteString("sluice: an old message\n")
	for out.Len() < 8<<20 {
		out.WriteString("chatter from the pre-exec, again and again\n")
	}
	out.WriteString("sluice: reverse tunnel: port 6379 taken\nset -x trace after it\n")
	f.put(ref.Dir+"/job.out", out.String())

	msg, err := c.FailureMessage(context.Background(), ref)
	if err != nil || msg != "reverse tunnel: port 6379 taken" {
		t.Errorf("FailureMessage = %q, %v; want the last sluice line", msg, err)
	}
	if got := f.bytesRead(); got > failureWindow+1 {
		t.Errorf("read %d bytes of an 8 MiB job.out; want at most %d", got, failureWindow)
	}
}

func TestFailureMessageCutLine(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	// The window starts inside a line that looks like a message from its
	// cut: it must not be taken for one.
	f.put(ref.Dir+"/job.out", strings.Repeat("x", 100)+"sluice: forged by the cut\n"+strings.Repeat("y\n", failureWindow/2-13))
	msg, err := c.FailureMessage(context.Background(), ref)
	if err != nil || msg != "" {
		t.Errorf("FailureMessage = %q, %v; want none", msg, err)
	}
	// A window that starts a line keeps it.
	f.put(ref.Dir+"/job.out", strings.Repeat("x", 99)+"\nsluice: whole\n"+strings.Repeat("y\n", failureWindow/2-7))
	msg, err = c.FailureMessage(context.Background(), ref)
	if err != nil || msg != "whole" {
		t.Errorf("FailureMessage = %q, %v; want %q", msg, err, "whole")
	}
}

func TestFailureMessageRefusesWhatIsNotARegularFile(t *testing.T) {
	for _, typ := range []fs.FileMode{fs.ModeNamedPipe, fs.ModeSymlink} {
		c, f, _ := newTestClient(t)
		ref := c.Ref("lab", sampleUID, "5")
		f.special(ref.Dir+"/job.out", typ)
		msg, err := c.FailureMessage(context.Background(), ref)
		if !errors.Is(err, site.ErrNotRegular) || msg != "" {
			t.Errorf("FailureMessage with a job.out of type %v = %q, %v; want ErrNotRegular", typ, msg, err)
		}
	}
}

func TestFailureMessageMissing(t *testing.T) {
	c, _, _ := newTestClient(t)
	msg, err := c.FailureMessage(context.Background(), c.Ref("lab", sampleUID, "5"))
	if err != nil || msg != "" {
		t.Errorf("FailureMessage without job.out = %q, %v; want none", msg, err)
	}
}

// FuzzReadTail: the tail is a suffix of the file of at most n bytes that
// starts a line, and is the longest such suffix.
func FuzzReadTail(f *testing.F) {
	f.Add([]byte("a\nsluice: b\nc"), 4)
	f.Add([]byte("\n\n\n"), 1)
	f.Add([]byte("no newline at all"), 5)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n <= 0 || n > 1<<16 {
			return
		}
		c, fk, _ := newTestClient(t)
		file := testRoot + "/lab-x/job.out"
		fk.put(file, string(data))
		got, err := c.readTail(context.Background(), file, n)
		if err != nil {
			t.Fatalf("readTail: %v", err)
		}
		if len(got) > n || !bytes.HasSuffix(data, got) {
			t.Fatalf("readTail(%q, %d) = %q; want a suffix of at most %d bytes", data, n, got, n)
		}
		start := len(data) - len(got)
		if start > 0 && data[start-1] != '\n' && len(got) > 0 {
			t.Fatalf("readTail(%q, %d) = %q; does not start a line", data, n, got)
		}
		// No longer suffix within n bytes starts a line.
		for s := len(data) - min(n, len(data)); s < start; s++ {
			if s == 0 || data[s-1] == '\n' {
				t.Fatalf("readTail(%q, %d) = %q; the suffix from %d starts a line too", data, n, got, s)
			}
		}
	})
}
