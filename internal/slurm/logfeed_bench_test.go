package slurm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// countingRunner counts what is asked of the site as the SSH site does it:
// commands, each a session on the login node (squeue, and the dd of a read
// that finds new bytes), and SFTP operations (the lstat of every read, a
// stat).
type countingRunner struct {
	site.Runner
	commands, sftp atomic.Int64
}

func (c *countingRunner) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	c.commands.Add(1)
	return c.Runner.Run(ctx, stdin, args...)
}

func (c *countingRunner) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	c.sftp.Add(1)
	data, err := c.Runner.ReadAt(ctx, p, off, n)
	if len(data) > 0 {
		c.commands.Add(1)
	}
	return data, err
}

func (c *countingRunner) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	c.sftp.Add(1)
	return c.Runner.Stat(ctx, p)
}

// BenchmarkFollowers follows one container's log with 1 and with 200
// followers at the default poll interval (500 ms), and reports what they
// cost the site: "writing", an op is a line written and read by every
// follower; "idle", an op is a second in which the log does not grow.
//
//	go test -run '^$' -bench Followers -benchtime 10x ./internal/slurm
func BenchmarkFollowers(b *testing.B) {
	for _, mode := range []string{"writing", "idle"} {
		for _, n := range []int{1, 200} {
			b.Run(fmt.Sprintf("%s/followers=%d", mode, n), func(b *testing.B) {
				benchFollowers(b, n, mode == "idle")
			})
		}
	}
}

func benchFollowers(b *testing.B, n int, idle bool) {
	c, f, _ := newTestClient(b)
	c.PollInterval = defaultPollInterval
	cr := &countingRunner{Runner: f}
	c.Site = cr
	f.handle = (&slurmFake{squeue: "5|RUNNING|None|node1|1|NONE|" + sampleUID + "\n"}).handle
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "2026-01-02T03:04:01Z first\n")
	var readers []*bufio.Reader
	for range n {
		r, err := c.Logs(context.Background(), ref, "main", LogOptions{Tail: -1, Follow: true})
		if err != nil {
			b.Fatalf("Logs: %v", err)
		}
		defer r.Close()
		br := bufio.NewReader(r)
		if _, err := br.ReadString('\n'); err != nil {
			b.Fatalf("first line: %v", err)
		}
		readers = append(readers, br)
	}
	cr.commands.Store(0)
	cr.sftp.Store(0)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if idle {
			time.Sleep(time.Second)
			continue
		}
		f.appendTo(ref.Dir+"/main.log", fmt.Sprintf("2026-01-02T03:04:02Z line %d\n", i))
		for _, br := range readers {
			if _, err := br.ReadString('\n'); err != nil {
				b.Fatalf("line %d: %v", i, err)
			}
		}
	}
	b.StopTimer()
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(cr.commands.Load())/secs, "commands/s")
	b.ReportMetric(float64(cr.sftp.Load())/secs, "sftp-ops/s")
}
