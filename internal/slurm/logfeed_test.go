package slurm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// follower opens a followed log and returns a line reader of it.
func follower(t *testing.T, c *Client, ref JobRef, opts LogOptions) (*bufio.Reader, io.Closer) {
	t.Helper()
	opts.Follow = true
	r, err := c.Logs(context.Background(), ref, "main", opts)
	if err != nil {
		t.Fatalf("Logs(%+v): %v", opts, err)
	}
	t.Cleanup(func() { r.Close() })
	return bufio.NewReader(r), r
}

// followFirst follows a log of one line from its start, and reads the line.
func followFirst(t *testing.T, c *Client, f *fakeSite) (JobRef, *bufio.Reader) {
	t.Helper()
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	r, _ := follower(t, c, ref, LogOptions{Tail: -1})
	expectLine(t, "the follower", r, "first\n")
	return ref, r
}

func expectLine(t *testing.T, who string, r *bufio.Reader, want string) {
	t.Helper()
	got, err := r.ReadString('\n')
	if err != nil || got != want {
		t.Fatalf("%s read %q, %v; want %q", who, got, err, want)
	}
}

// TestFollowersShareAFeedEachWithItsOwnOptions: followers of one container
// share one feed, yet each gets its own tail, since, timestamps and limit,
// both for what was written before it joined and after.
func TestFollowersShareAFeedEachWithItsOwnOptions(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", sampleLog+"\n")

	all, _ := follower(t, c, ref, LogOptions{Tail: -1})
	for _, want := range []string{"one\n", "two\n", "continued without a stamp\n", "\n", "four\n"} {
		expectLine(t, "the first follower", all, want)
	}
	tail, _ := follower(t, c, ref, LogOptions{Tail: 1, Timestamps: true})
	expectLine(t, "tail 1 with timestamps", tail, "2026-01-02T03:04:04Z four\n")
	since, _ := follower(t, c, ref, LogOptions{Tail: -1, Since: time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC)})
	expectLine(t, "since 03:04:04", since, "four\n")
	now, _ := follower(t, c, ref, LogOptions{Tail: 0})
	limited, _ := follower(t, c, ref, LogOptions{Tail: 0, LimitBytes: 8})
	if n := c.FollowedLogs(); n != 1 {
		t.Errorf("5 followers of one container: %d feeds; want 1", n)
	}

	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:05Z five\n2026-01-02T03:04:06Z six\n")
	expectLine(t, "the first follower", all, "five\n")
	expectLine(t, "tail 1 with timestamps", tail, "2026-01-02T03:04:05Z five\n")
	expectLine(t, "since 03:04:04", since, "five\n")
	expectLine(t, "tail 0", now, "five\n")
	if rest, err := io.ReadAll(limited); err != nil || string(rest) != "five\nsix" {
		t.Errorf("limit 8 read %q, %v; want 8 bytes and EOF", rest, err)
	}
	c.EndLogs(sampleUID)
	for who, r := range map[string]*bufio.Reader{"all": all, "tail": tail, "since": since, "now": now} {
		if rest, err := io.ReadAll(r); err != nil || !strings.HasSuffix(string(rest), "six\n") {
			t.Errorf("%s read %q, %v after the end; want six and EOF", who, rest, err)
		}
	}
}

// TestASlowFollowerSkipsWithAMarker: a follower whose client does not read
// neither holds more than maxLag of the log nor slows the others; when it
// reads again it is told what it missed.
func TestASlowFollowerSkipsWithAMarker(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	slow, _ := follower(t, c, ref, LogOptions{Tail: 0})
	fast, _ := follower(t, c, ref, LogOptions{Tail: 0})

	line := "2026-01-02T03:04:02Z " + strings.Repeat("x", 1000) + "\n"
	lines := 3 * maxLag / len(line)
	f.appendTo(ref.Dir+"/main.log", strings.Repeat(line, lines))
	for i := range lines {
		expectLine(t, fmt.Sprintf("the fast follower, line %d", i), fast, line[len("2026-01-02T03:04:02Z "):])
	}
	c.EndLogs(sampleUID)
	rest, err := io.ReadAll(slow)
	if err != nil {
		t.Fatalf("the slow follower: %v", err)
	}
	if !strings.Contains(string(rest), " bytes of this log skipped: this reader fell more than ") {
		t.Errorf("the slow follower read %d bytes with no marker of what it skipped", len(rest))
	}
	if len(rest) > maxLag+len(line)+200 {
		t.Errorf("the slow follower read %d bytes after falling behind; want at most %d", len(rest), maxLag)
	}
}

// TestANewFollowerIsNotHeldBackByAStuckOne: a feed whose only reader is
// stuck waits for it, but a reader that joins then gets what is written.
func TestANewFollowerIsNotHeldBackByAStuckOne(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	follower(t, c, ref, LogOptions{Tail: 0}) // never read
	f.appendTo(ref.Dir+"/main.log", strings.Repeat("2026-01-02T03:04:02Z "+strings.Repeat("y", 1000)+"\n", 2*maxLag/1000))
	for read := int64(-1); f.bytesRead() != read; { // until the feed waits for its stuck reader
		read = f.bytesRead()
		time.Sleep(50 * time.Millisecond)
	}
	if f.bytesRead() >= 2*maxLag {
		t.Fatalf("the feed read all %d bytes for a reader that reads nothing", f.bytesRead())
	}
	fresh, _ := follower(t, c, ref, LogOptions{Tail: 0})
	f.appendTo(ref.Dir+"/main.log", "2026-01-02T03:04:03Z news\n")
	got := make(chan string, 1)
	go func() {
		line, _ := fresh.ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if line != "news\n" {
			t.Errorf("the new follower read %q; want news", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a follower that joined a feed waiting for a stuck reader got nothing")
	}
}

// TestTheFeedStopsWithItsLastFollower: once every follower has gone, the
// log is read no more.
func TestTheFeedStopsWithItsLastFollower(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	var closers []io.Closer
	for range 3 {
		r, cl := follower(t, c, ref, LogOptions{Tail: -1})
		expectLine(t, "a follower", r, "first\n")
		closers = append(closers, cl)
	}
	for _, cl := range closers {
		cl.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.FollowedLogs() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := c.FollowedLogs(); n != 0 {
		t.Fatalf("%d feeds once every follower closed; want 0", n)
	}
	before := f.readCount()
	time.Sleep(50 * time.Millisecond)
	if n := f.readCount() - before; n != 0 {
		t.Errorf("%d reads of the log after its last follower closed", n)
	}
}

// FuzzFollowedLogReadsAsTheWholeLog: whatever the job writes, and however
// its writes fall around a follower's start and the feed's reads, the
// followed log reads as the log read at once with the same options.
func FuzzFollowedLogReadsAsTheWholeLog(f *testing.F) {
	f.Add([]byte(sampleLog), uint16(30), uint8(3), false)
	f.Add([]byte("2026-01-02T03:04:01Z a\nb\n2026-01-02T03:04:02Zc\n\n"), uint16(5), uint8(0), true)
	f.Add([]byte("no stamp, no newline"), uint16(3), uint8(2), true)
	f.Fuzz(checkFollowedLog)
}

// checkFollowedLog follows log from its start, written in two parts cut at
// cut, with tail-1 as its Tail.
func checkFollowedLog(t *testing.T, log []byte, cutAt uint16, tailPlus1 uint8, stamps bool) {
	if len(log) > 4096 {
		return
	}
	cut, tail := min(int(cutAt), len(log)), int(tailPlus1%12)-1
	c, fs, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	fs.put(ref.Dir+"/main.log", string(log))
	opts := LogOptions{Tail: tail, Timestamps: stamps}
	want := readLogs(t, c, ref, opts)

	fs.put(ref.Dir+"/main.log", string(log[:cut]))
	opts.Follow = true
	r, err := c.Logs(context.Background(), ref, "main", opts)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer r.Close()
	fs.appendTo(ref.Dir+"/main.log", string(log[cut:]))
	// the tail of the whole log, not of its first part, is wanted
	if tail >= 0 && cut < len(log) {
		return
	}
	c.EndLogs(sampleUID)
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := io.ReadAll(r)
		done <- result{got, err}
	}()
	select {
	case res := <-done:
		if res.err != nil || string(res.got) != want {
			t.Errorf("followed %q, %v; read at once %q", res.got, res.err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the followed log did not end after EndLogs; read at once %q", want)
	}
}

// TestAReaderHoldsAtMostMaxLag: the lines a reader has taken but not yet
// written out (its client stopped reading in the middle of them) count
// against its lag with those still queued: lines pushed while it holds
// nearly maxLag are skipped, so that one reader never holds twice maxLag.
func TestAReaderHoldsAtMostMaxLag(t *testing.T) {
	r := &feedReader{wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	line := []byte(strings.Repeat("x", 1023) + "\n")
	lines := func(n int) []feedLine {
		out := make([]feedLine, n)
		for i := range out {
			out[i] = feedLine{off: int64(i * len(line)), text: line}
		}
		return out
	}
	r.push(lines(maxLag/len(line) - 1))
	held, _, _, _ := r.take(context.Background()) // the copy writes them to a client that does not read
	r.push(lines(logChunk / len(line)))
	r.mu.Lock()
	queued, skipped := r.queued, r.skipped
	r.mu.Unlock()
	if n := len(held)*len(line) + queued; n > maxLag || skipped == 0 {
		t.Errorf("the reader holds %d bytes (%d taken, %d queued), skipped %d; want at most %d held, the rest skipped", n, len(held)*len(line), queued, skipped, maxLag)
	}
	if r.roomy() {
		t.Error("a reader holding maxLag has room for another read")
	}
	if more, _, _, _ := r.take(context.Background()); len(more) != 0 || !r.roomy() {
		t.Errorf("once its taken lines are written: took %d more lines, room %v; want none queued, and room", len(more), r.roomy())
	}
}
