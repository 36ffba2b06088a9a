package sshx

import (
	"context"
	"errors"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestSpreadWindow(t *testing.T) {
	for _, tc := range []struct {
		n          int
		per, limit time.Duration
		want       time.Duration
	}{
		{50, 100 * time.Millisecond, 30 * time.Second, 5 * time.Second},
		{1000, 100 * time.Millisecond, 30 * time.Second, 30 * time.Second},
		{0, 100 * time.Millisecond, 30 * time.Second, 100 * time.Millisecond},
		{-3, 100 * time.Millisecond, 0, 100 * time.Millisecond},
		{7, 0, 30 * time.Second, 0},
		{1 << 40, time.Hour, 0, math.MaxInt64},
		{300, 100 * time.Millisecond, 30 * time.Second, 30 * time.Second},
	} {
		if got := SpreadWindow(tc.n, tc.per, tc.limit); got != tc.want {
			t.Errorf("SpreadWindow(%d, %v, %v) = %v; want %v", tc.n, tc.per, tc.limit, got, tc.want)
		}
	}
}

func TestJitterFirstAtOnceThenWithinWindow(t *testing.T) {
	const window = 40 * time.Millisecond
	calls := 0
	j := &Jitter{Window: func() time.Duration { calls++; return window }}
	ctx := context.Background()

	start := time.Now()
	if err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Millisecond || calls != 0 {
		t.Fatalf("first Wait took %v and asked the window %d times; want no wait, no window", d, calls)
	}
	var total time.Duration
	for range 20 {
		start := time.Now()
		if err := j.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		if d > window+50*time.Millisecond {
			t.Fatalf("Wait took %v; want at most the window %v (and scheduling slack)", d, window)
		}
		total += d
	}
	if calls != 20 {
		t.Errorf("window asked %d times; want once per later Wait (20)", calls)
	}
	// 20 waits uniform in [0, 40ms) all below 1ms has odds of 40^-20.
	if total < time.Millisecond {
		t.Errorf("20 later waits took %v together; want them spread over the window", total)
	}
}

func TestJitterCancelled(t *testing.T) {
	j := &Jitter{Window: func() time.Duration { return time.Hour }}
	ctx, cancel := context.WithCancel(context.Background())
	if err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := j.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel = %v; want context.Canceled", err)
	}
	var none *Jitter
	if err := none.Wait(ctx); err != nil {
		t.Errorf("nil Jitter Wait = %v; want nil", err)
	}
	zero := &Jitter{Window: func() time.Duration { return 0 }}
	for range 2 {
		if err := zero.Wait(ctx); err != nil {
			t.Errorf("zero window Wait = %v; want nil", err)
		}
	}
}

func TestPacedSpreadsDialsToTheRate(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return nil, errors.New("no network in this test")
	}
	// 50 per second, burst 2: 6 dials at once take 4 intervals of 20 ms.
	paced := Paced(dial, rate.NewLimiter(50, 2))
	start := time.Now()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { paced(context.Background(), "tcp", "10.0.0.1:22") })
	}
	wg.Wait()
	if d := time.Since(start); d < 70*time.Millisecond {
		t.Errorf("6 dials at 50/s with burst 2 took %v; want about 80ms", d)
	}
	if len(at) != 6 {
		t.Fatalf("%d dials made; want 6", len(at))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	empty := rate.NewLimiter(0.001, 1)
	empty.Allow()
	if _, err := Paced(dial, empty)(ctx, "tcp", "10.0.0.1:22"); err == nil {
		t.Error("a paced dial with no token and a cancelled context went ahead")
	}
	if Paced(dial, nil) == nil {
		t.Error("Paced with no limiter returned nil; want dial itself")
	}
}
