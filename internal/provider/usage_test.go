package provider

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
)

// fakeUsage answers Usage from its map, stamped with the clock's time,
// and counts the calls.
type fakeUsage struct {
	mu    sync.Mutex
	now   func() time.Time
	cpu   map[slurm.JobID]time.Duration
	calls [][]slurm.JobID
	err   error
	block chan struct{} // if set, Usage waits for it
}

func (f *fakeUsage) Usage(ctx context.Context, jobs []slurm.JobID) (map[slurm.JobID]slurm.Usage, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, jobs)
	if f.err != nil {
		return nil, f.err
	}
	out := map[slurm.JobID]slurm.Usage{}
	for _, id := range jobs {
		if cpu, ok := f.cpu[id]; ok {
			out[id] = slurm.Usage{CPU: cpu, Memory: 1 << 20, Time: f.now()}
		}
	}
	return out, nil
}

func (f *fakeUsage) set(id slurm.JobID, cpu time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cpu[id] = cpu
}

func (f *fakeUsage) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// The sampler reads once per interval however often it is asked, gives
// a job's CPU rate once two reads saw it, and keeps the node's CPU time
// from going down when a job ends or is requeued.
func TestUsageSampler(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	f := &fakeUsage{now: clk.Now, cpu: map[slurm.JobID]time.Duration{"1": 10 * time.Second, "2": time.Second}}
	s := newUsageSampler(f, 10*time.Second, clk.Now)
	ctx := context.Background()
	both := []slurm.JobID{"1", "2"}

	got, node, err := s.sample(ctx, both)
	if err != nil {
		t.Fatal(err)
	}
	if got["1"].CPU != 10*time.Second || got["1"].NanoCores != nil || node.CPU != 11*time.Second || node.Memory != 2<<20 {
		t.Fatalf("first read: %+v, node %+v; want CPU times, no rate yet", got, node)
	}
	f.set("1", 25*time.Second)
	clk.add(5 * time.Second)
	if _, _, err := s.sample(ctx, both); err != nil || f.callCount() != 1 {
		t.Fatalf("%d reads, %v, within the interval; want the first read's figures", f.callCount(), err)
	}
	clk.add(5 * time.Second)
	got, node, err = s.sample(ctx, both)
	if err != nil || f.callCount() != 2 {
		t.Fatalf("%d reads, %v; want a second read after the interval", f.callCount(), err)
	}
	if r := got["1"].NanoCores; r == nil || *r != 1_500_000_000 {
		t.Errorf("job 1's rate %v; want 1.5 cores (15 s of CPU in 10 s)", r)
	}
	if r := got["2"].NanoCores; r == nil || *r != 0 {
		t.Errorf("job 2's rate %v; want 0", r)
	}
	if node.NanoCores != 1_500_000_000 || node.CPU != 26*time.Second || !node.Time.Equal(clk.Now()) {
		t.Errorf("node %+v; want 1.5 cores, 26 s in all, read now", node)
	}

	// job 2 ended: it is no longer asked about, and its CPU stays counted
	clk.add(10 * time.Second)
	got, node, err = s.sample(ctx, []slurm.JobID{"1"})
	if err != nil || len(got) != 1 || node.CPU != 26*time.Second {
		t.Errorf("got %+v, node %+v, %v; want job 1 alone and 26 s on the node", got, node, err)
	}
	// job 1 was requeued: its new batch step starts from zero
	f.set("1", 2*time.Second)
	clk.add(10 * time.Second)
	got, node, err = s.sample(ctx, []slurm.JobID{"1"})
	if err != nil || got["1"].NanoCores != nil || node.CPU != 28*time.Second {
		t.Errorf("got %+v, node %+v, %v; want no rate for the new step and 28 s on the node", got, node, err)
	}

	// a failed read is an error, and the next ask reads again
	f.err = errors.New("sstat: boom")
	clk.add(10 * time.Second)
	if _, _, err := s.sample(ctx, both); err == nil {
		t.Error("a failed read gave no error")
	}
	f.err = nil
	if _, _, err := s.sample(ctx, both); err != nil {
		t.Errorf("the read after a failure: %v", err)
	}
}

// A caller waiting behind a read in flight gives up with its context.
func TestUsageSamplerWaitEndsWithContext(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	f := &fakeUsage{now: clk.Now, cpu: map[slurm.JobID]time.Duration{}, block: make(chan struct{})}
	s := newUsageSampler(f, 0, clk.Now)
	first := make(chan error, 1)
	go func() {
		_, _, err := s.sample(context.Background(), nil)
		first <- err
	}()
	for len(s.sem) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := s.sample(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v; want the context's deadline", err)
	}
	close(f.block)
	if err := <-first; err != nil {
		t.Errorf("the first read: %v", err)
	}
}
