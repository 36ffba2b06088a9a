//go:build bench

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/echo"
)

// Load tests, run by `tunnelfwd load -test NAME`.
const (
	testDown    = "down"    // throughput, node to client, -streams connections
	testUp      = "up"      // throughput, client to node, -streams connections
	testSetup   = "setup"   // -samples sequential connections: connect, one byte there and back
	testPing    = "ping"    // pingSize-byte requests over -streams kept connections
	testNewConn = "newconn" // one request per new connection, -streams workers
)

// loadSpec is one load test: what `tunnelfwd load` is told.
type loadSpec struct {
	Test     string
	Addr     string
	Streams  int
	Warmup   time.Duration
	Duration time.Duration
	Samples  int
}

// args returns the command line of s, after "load".
func (s loadSpec) args() []string {
	return []string{"-test", s.Test, "-addr", s.Addr, "-streams", fmt.Sprint(s.Streams),
		"-warmup", s.Warmup.String(), "-duration", s.Duration.String(), "-samples", fmt.Sprint(s.Samples)}
}

// loadResult is what a load test measured, printed as JSON.
type loadResult struct {
	// Count is the bytes (down, up) or requests (ping, newconn) completed
	// in the measured window of Seconds, after the warm-up.
	Count   int64   `json:"count"`
	Seconds float64 `json:"seconds"`
	// Total is the bytes or requests of the whole test, warm-up and
	// teardown included (for the CPU cost per byte).
	Total int64 `json:"total"`
	// SetupMicros are the set-up times of the setup test.
	SetupMicros []int64 `json:"setup_us,omitempty"`
	Errors      int64   `json:"errors"`
	FirstErr    string  `json:"first_err,omitempty"`
}

// loadMain is `tunnelfwd load`: it runs one load test against -addr and
// prints its loadResult on standard output.
func loadMain(args []string) int {
	var s loadSpec
	fs := flag.NewFlagSet("tunnelfwd load", flag.ContinueOnError)
	fs.StringVar(&s.Test, "test", "", "down, up, setup, ping or newconn")
	fs.StringVar(&s.Addr, "addr", "", "the job server, or the tunnel in front of it")
	fs.IntVar(&s.Streams, "streams", 1, "connections (down, up, ping) or workers (newconn)")
	fs.DurationVar(&s.Warmup, "warmup", 300*time.Millisecond, "time before the measured window")
	fs.DurationVar(&s.Duration, "duration", 2*time.Second, "the measured window")
	fs.IntVar(&s.Samples, "samples", 100, "connections of the setup test")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := runLoad(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tunnelfwd load:", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelfwd load:", err)
		return 1
	}
	return 0
}

func runLoad(s loadSpec) (*loadResult, error) {
	if s.Addr == "" || s.Streams < 1 {
		return nil, errors.New("-addr and -streams of at least 1 are required")
	}
	switch s.Test {
	case testSetup:
		return setupTimes(s.Addr, s.Samples)
	case testDown, testUp, testPing:
		return streams(s)
	case testNewConn:
		return newConns(s)
	}
	return nil, fmt.Errorf("-test %q: want down, up, setup, ping or newconn", s.Test)
}

// errCount records the errors of a test, keeping the first.
type errCount struct {
	n     atomic.Int64
	mu    sync.Mutex
	first string
}

func (e *errCount) add(err error) {
	if e.n.Add(1) == 1 {
		e.mu.Lock()
		e.first = err.Error()
		e.mu.Unlock()
	}
}

func (e *errCount) fill(r *loadResult) {
	r.Errors = e.n.Load()
	e.mu.Lock()
	r.FirstErr = e.first
	e.mu.Unlock()
}

// window waits out the warm-up, then measures count over the window.
func window(s loadSpec, count *atomic.Int64) (n int64, secs float64) {
	time.Sleep(s.Warmup)
	c0, t0 := count.Load(), time.Now()
	time.Sleep(s.Duration)
	return count.Load() - c0, time.Since(t0).Seconds()
}

// setupTimes times n connections one after the other: from the dial to
// the echo of one byte sent right after it.
func setupTimes(addr string, n int) (*loadResult, error) {
	res := &loadResult{}
	var errs errCount
	for range n {
		d, err := echo.RoundTrip(addr)
		if err != nil {
			errs.add(err)
			continue
		}
		res.SetupMicros = append(res.SetupMicros, d.Microseconds())
	}
	res.Count = int64(len(res.SetupMicros))
	res.Total = res.Count
	errs.fill(res)
	return res, nil
}

// streams opens s.Streams connections, runs s.Test on each and measures
// the bytes or requests of all of them over the window.
func streams(s loadSpec) (*loadResult, error) {
	conns := make([]net.Conn, 0, s.Streams)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	op := map[string]byte{testDown: opDownload, testUp: opUpload, testPing: opPing}[s.Test]
	for range s.Streams {
		c, err := net.DialTimeout("tcp", s.Addr, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("dial: %w", err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte{op}); err != nil {
			return nil, fmt.Errorf("write op: %w", err)
		}
	}
	var count atomic.Int64
	var errs errCount
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			err := stream(c, s.Test, &count)
			if err != nil && !stopped.Load() {
				errs.add(err)
			}
		})
	}
	res := &loadResult{}
	res.Count, res.Seconds = window(s, &count)
	stopped.Store(true)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	res.Total = count.Load()
	errs.fill(res)
	return res, nil
}

// stream runs test on c until c is closed, adding bytes or requests to
// count.
func stream(c net.Conn, test string, count *atomic.Int64) error {
	switch test {
	case testDown:
		buf := make([]byte, chunk)
		for {
			n, err := c.Read(buf)
			count.Add(int64(n))
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
		}
	case testUp:
		buf := make([]byte, chunk)
		for {
			n, err := c.Write(buf)
			count.Add(int64(n))
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
	default:
		req := make([]byte, pingSize)
		ans := make([]byte, pingSize)
		for {
			if _, err := c.Write(req); err != nil {
				return fmt.Errorf("write request: %w", err)
			}
			if _, err := io.ReadFull(c, ans); err != nil {
				return fmt.Errorf("read answer: %w", err)
			}
			count.Add(1)
		}
	}
}

// newConns runs s.Streams workers that each make one request per new
// connection, and measures the requests over the window.
func newConns(s loadSpec) (*loadResult, error) {
	ctx, cancel := context.WithCancel(context.Background())
	var count atomic.Int64
	var errs errCount
	var wg sync.WaitGroup
	for range s.Streams {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := request(s.Addr); err != nil {
					if ctx.Err() == nil {
						errs.add(err)
						// Do not spin on a refusing tunnel.
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				count.Add(1)
			}
		})
	}
	res := &loadResult{}
	res.Count, res.Seconds = window(s, &count)
	cancel()
	wg.Wait()
	res.Total = count.Load()
	errs.fill(res)
	return res, nil
}

// request makes one request on a new connection.
func request(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := make([]byte, 1+pingSize)
	req[0] = opPing
	if _, err := conn.Write(req); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	if _, err := io.ReadFull(conn, req[:pingSize]); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return nil
}
