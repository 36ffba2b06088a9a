package slurm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeClock advances by step at every reading.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// cancelFake plays a job that takes polls squeue answers to die once
// cancelled.
type cancelFake struct {
	mu     sync.Mutex
	uid    string
	state  string // before scancel
	polls  int    // squeue answers of RUNNING after scancel
	gone   bool   // squeue no longer knows the job
	failSc bool   // scancel fails
	sent   bool
}

func (f *cancelFake) handle(args []string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch program(args) {
	case "scancel":
		f.sent = true
		if f.failSc {
			return nil, exitErr(args, 1, "scancel: error: Unable to contact slurm controller")
		}
		return nil, nil
	case "squeue":
		if f.gone {
			return nil, exitErr(args, 1, "slurm_load_jobs error: Invalid job id specified")
		}
		state := f.state
		if f.sent {
			if f.polls > 0 {
				f.polls--
				state = "RUNNING"
			} else {
				state = "CANCELLED"
			}
		}
		return printSqueue(args, queueJobs(fmt.Sprintf("5|%s|None|node1|1|NONE|%s\n", state, f.uid)))
	}
	return nil, exitErr(args, 127, "not found")
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name        string
		fake        *cancelFake
		wantScancel func(n int) bool
	}{
		{"running, dies at once", &cancelFake{state: "RUNNING"}, func(n int) bool { return n == 1 }},
		{"running, lingers", &cancelFake{state: "RUNNING", polls: 12}, func(n int) bool { return n >= 2 && n < 12 }},
		{"pending", &cancelFake{state: "PENDING"}, func(n int) bool { return n == 1 }},
		{"already completed", &cancelFake{state: "COMPLETED"}, func(n int) bool { return n == 0 }},
		{"already gone", &cancelFake{gone: true}, func(n int) bool { return n == 0 }},
		{"job id names another job", &cancelFake{state: "RUNNING", uid: "someone-else"}, func(n int) bool { return n == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			c.Now = (&fakeClock{step: time.Second}).Now
			ref := c.Ref("lab", sampleUID, "5")
			fake := tt.fake
			if fake.uid == "" {
				fake.uid = ref.UID
			}
			f.handle = fake.handle
			if err := c.Cancel(context.Background(), ref); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			if n := f.count("scancel"); !tt.wantScancel(n) {
				t.Errorf("scancel ran %d times", n)
			}
		})
	}
}

func TestCancelGivesUpWithTheContext(t *testing.T) {
	c, f, _ := newTestClient(t)
	f.handle = (&cancelFake{uid: sampleUID, state: "RUNNING", polls: 1 << 30, failSc: true}).handle
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.Cancel(ctx, c.Ref("lab", sampleUID, "5"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Cancel = %v; want the context's error", err)
	}
}

func TestCancelFindsTheJob(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "")
	f.handle = (&cancelFake{uid: sampleUID, state: "RUNNING"}).handle
	if err := c.Cancel(context.Background(), ref); err != nil {
		t.Fatalf("Cancel by name: %v", err)
	}
	if got := f.lastCall("scancel"); len(got) != 2 || got[1] != "5" {
		t.Errorf("scancel args = %q; want [scancel 5]", got)
	}

	c, f, _ = newTestClient(t)
	f.put(ref.Dir+"/job.id", "5\n")
	f.handle = (&cancelFake{uid: sampleUID, state: "RUNNING"}).handle
	if err := c.Cancel(context.Background(), ref); err != nil {
		t.Fatalf("Cancel from job.id: %v", err)
	}
	if got := f.lastCall("scancel"); len(got) != 2 || got[1] != "5" {
		t.Errorf("scancel args = %q; want [scancel 5]", got)
	}

	c, f, _ = newTestClient(t)
	f.handle = (&slurmFake{}).handle // no such job anywhere
	if err := c.Cancel(context.Background(), ref); err != nil {
		t.Fatalf("Cancel of nothing: %v", err)
	}
	if n := f.count("scancel"); n != 0 {
		t.Errorf("scancel ran %d times for no job; want 0", n)
	}
}

func TestRemove(t *testing.T) {
	c, f, _ := newTestClient(t)
	ref := c.Ref("lab", sampleUID, "5")
	f.put(ref.Dir+"/main.log", "x\n")
	f.handle = (&cancelFake{uid: sampleUID, state: "RUNNING", failSc: true, polls: 1 << 30}).handle
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Remove(ctx, ref); err == nil {
		t.Fatalf("Remove of a job that does not die: got no error")
	}
	if _, err := f.Stat(context.Background(), ref.Dir); err != nil {
		t.Errorf("the job directory went before Slurm confirmed the cancel: %v", err)
	}

	f.handle = (&cancelFake{uid: sampleUID, state: "RUNNING"}).handle
	if err := c.Remove(context.Background(), ref); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := f.Stat(context.Background(), ref.Dir); err == nil {
		t.Errorf("the job directory is still there")
	}
}

// TestCancelWithGrace: a job whose containers have preStop hooks is first
// told through its batch script alone (scancel --batch --signal=TERM); a
// job that ends within the grace period is not cancelled, one that
// lingers is, once the grace period has passed.
func TestCancelWithGrace(t *testing.T) {
	for _, tt := range []struct {
		name      string
		polls     int
		wantPlain bool
	}{
		{"ends within the grace period", 3, false},
		{"lingers", 40, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			c.Now = (&fakeClock{step: time.Second}).Now
			ref := c.Ref("lab", sampleUID, "5")
			ref.Grace = 10 * time.Second
			f.handle = (&cancelFake{uid: sampleUID, state: "RUNNING", polls: tt.polls}).handle
			if err := c.Cancel(context.Background(), ref); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			var batch, plain int
			for _, call := range f.allCalls("scancel") {
				switch {
				case len(call) == 4 && call[1] == "--batch" && call[2] == "--signal=TERM" && call[3] == "5":
					batch++
				case len(call) == 2 && call[1] == "5":
					plain++
				default:
					t.Errorf("unexpected call %q", call)
				}
			}
			if batch != 1 || (plain > 0) != tt.wantPlain {
				t.Errorf("got %d scancel --batch and %d scancel; want 1 and plain %v", batch, plain, tt.wantPlain)
			}
		})
	}
}
