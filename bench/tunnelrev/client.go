//go:build bench

package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/echo"
)

// Tests the client runs.
const (
	testProbe = "probe" // one echo, retried until it works or -duration passes
	testSetup = "setup" // -n connections one after another: connect, one byte there and back
	testRR    = "rr"    // -streams connections each sending -size bytes and reading them back
	testUp    = "up"    // -streams connections each writing for -duration, counted by the server
	testDown  = "down"  // -streams connections each reading for -duration
)

// clientResult is what the client prints, as JSON, on standard output.
type clientResult struct {
	Bytes    int64   `json:"bytes,omitempty"`
	Pairs    int64   `json:"pairs,omitempty"`
	Seconds  float64 `json:"seconds,omitempty"`
	SetupsNs []int64 `json:"setups_ns,omitempty"`
}

// clientOptions are the client's flags.
type clientOptions struct {
	test     string
	addr     string
	streams  int
	duration time.Duration
	n        int
	size     int
}

// clientMain is the "client" subcommand, run as the job's user in the
// node's network namespace: one test against -addr, its result as JSON on
// standard output.
func clientMain(args []string) int {
	var o clientOptions
	fs := flag.NewFlagSet("tunnelrev client", flag.ContinueOnError)
	fs.StringVar(&o.test, "test", "", "probe, setup, rr, up or down")
	fs.StringVar(&o.addr, "addr", "", "HOST:PORT of the relay (or of the server, for the direct path)")
	fs.IntVar(&o.streams, "streams", 1, "parallel connections (rr, up, down)")
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "how long rr, up and down run; how long probe retries")
	fs.IntVar(&o.n, "n", 200, "connections made by setup")
	fs.IntVar(&o.size, "size", 64, "bytes of each request and response (rr)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := runClient(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tunnelrev client %s %s: %v\n", o.test, o.addr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelrev client: write result:", err)
		return 1
	}
	return 0
}

func runClient(o clientOptions) (clientResult, error) {
	switch o.test {
	case testProbe:
		return clientResult{}, probe(o.addr, o.duration)
	case testSetup:
		return setups(o.addr, o.n)
	case testRR:
		return parallel(o, requestResponse)
	case testUp:
		return parallel(o, upload)
	case testDown:
		return parallel(o, download)
	}
	return clientResult{}, fmt.Errorf("unknown test %q", o.test)
}

// probe echoes one byte through addr, trying again every 100ms until it
// works or d has passed.
func probe(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		_, err := echo.RoundTrip(addr)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setups makes n connections one after the other and times each from the
// start of the connect to the first byte echoed back.
func setups(addr string, n int) (clientResult, error) {
	res := clientResult{SetupsNs: make([]int64, 0, n)}
	for range n {
		d, err := echo.RoundTrip(addr)
		if err != nil {
			return res, err
		}
		res.SetupsNs = append(res.SetupsNs, d.Nanoseconds())
	}
	return res, nil
}

// stream is one connection's share of a parallel test: bytes or pairs.
type stream func(addr string, o clientOptions) (int64, error)

// parallel runs o.streams connections at once and adds up what they did;
// Seconds is from the start to the end of the last one.
func parallel(o clientOptions, run stream) (clientResult, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		errs  []error
	)
	start := time.Now()
	for range o.streams {
		wg.Go(func() {
			n, err := run(o.addr, o)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return clientResult{}, err
	}
	if o.test == testRR {
		return clientResult{Pairs: total, Seconds: secs}, nil
	}
	return clientResult{Bytes: total, Seconds: secs}, nil
}

// requestResponse sends o.size bytes and reads them back, again and again
// for o.duration; it returns the pairs completed.
func requestResponse(addr string, o clientOptions) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, fmt.Errorf("rr connect: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{opEcho}); err != nil {
		return 0, fmt.Errorf("rr write: %w", err)
	}
	req := make([]byte, o.size)
	resp := make([]byte, o.size)
	end := time.Now().Add(o.duration)
	c.SetDeadline(end.Add(10 * time.Second))
	var pairs int64
	for time.Now().Before(end) {
		if _, err := c.Write(req); err != nil {
			return pairs, fmt.Errorf("rr write: %w", err)
		}
		if _, err := io.ReadFull(c, resp); err != nil {
			return pairs, fmt.Errorf("rr read: %w", err)
		}
		pairs++
	}
	return pairs, nil
}

// upload writes frames for o.duration, then a last one, and returns the
// byte count the server reports having read.
func upload(addr string, o clientOptions) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, fmt.Errorf("up connect: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{opSink}); err != nil {
		return 0, fmt.Errorf("up write: %w", err)
	}
	buf := make([]byte, copyBuf)
	end := time.Now().Add(o.duration)
	c.SetDeadline(end.Add(30 * time.Second))
	for more := true; more; {
		more = time.Now().Before(end)
		buf[0] = frameMore
		if !more {
			buf[0] = frameLast
		}
		if _, err := c.Write(buf); err != nil {
			return 0, fmt.Errorf("up write: %w", err)
		}
	}
	var b [8]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, fmt.Errorf("up read the count: %w", err)
	}
	return int64(binary.BigEndian.Uint64(b[:])), nil
}

// download reads for o.duration what the server sends and returns the
// bytes read.
func download(addr string, o clientOptions) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, fmt.Errorf("down connect: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{opSource}); err != nil {
		return 0, fmt.Errorf("down write: %w", err)
	}
	buf := make([]byte, copyBuf)
	end := time.Now().Add(o.duration)
	c.SetReadDeadline(end)
	var n int64
	for {
		m, err := c.Read(buf)
		n += int64(m)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return n, nil
			}
			return n, fmt.Errorf("down read: %w", err)
		}
	}
}
