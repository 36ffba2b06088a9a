package slurm

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// concurrentReads is a site whose reads take a while, and which records
// how many ran at once at the most.
type concurrentReads struct {
	site.Runner
	now, most atomic.Int64
}

func (c *concurrentReads) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	now := c.now.Add(1)
	defer c.now.Add(-1)
	for {
		most := c.most.Load()
		if now <= most || c.most.CompareAndSwap(most, now) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	return c.Runner.ReadAt(ctx, p, off, n)
}

// TestLogHistoryReadsAreBounded: however many clients read a long log at
// once (kubectl logs, or followers that each catch up from its start),
// at most maxLogReads of their reads run on the site together, leaving
// the connection's other sessions to the status poll and the submissions.
func TestLogHistoryReadsAreBounded(t *testing.T) {
	c, f, _ := newTestClient(t)
	cr := &concurrentReads{Runner: f}
	c.Site = cr
	ref := c.Ref("lab", sampleUID, "5")
	line := "2026-01-02T03:04:02Z " + strings.Repeat("x", 1000) + "\n"
	f.put(ref.Dir+"/main.log", strings.Repeat(line, 3*logChunk/len(line)))
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			opts := LogOptions{Tail: -1, Follow: i%2 == 0}
			r, err := c.Logs(context.Background(), ref, "main", opts)
			if err != nil {
				t.Errorf("Logs: %v", err)
				return
			}
			defer r.Close()
			if opts.Follow {
				// a follower: its catch-up read to the feed's start
				br := bufio.NewReader(r)
				for range 3 * logChunk / len(line) {
					if _, err := br.ReadString('\n'); err != nil {
						t.Errorf("follower: %v", err)
						return
					}
				}
				return
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Errorf("read: %v", err)
			}
		})
	}
	wg.Wait()
	if most := cr.most.Load(); most > maxLogReads+1 {
		t.Errorf("%d log reads ran at once on the site; want at most %d, and the feed's own", most, maxLogReads)
	}
}
