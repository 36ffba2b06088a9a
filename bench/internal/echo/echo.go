//go:build bench

// Package echo is the echo both tunnel benchmarks' servers offer: a
// connection whose first byte is Op gets back every byte after it. The
// benchmarks time connection set-up with it and probe their paths.
package echo

import (
	"fmt"
	"io"
	"net"
	"time"
)

// Op is the first byte of a connection that asks for an echo.
const Op = 'E'

// timeout bounds a RoundTrip.
const timeout = 10 * time.Second

// RoundTrip connects to addr, asks for an echo, sends one byte and waits
// for it back; it returns the time from the start of the connect to the
// byte's return.
func RoundTrip(addr string) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(start.Add(timeout))
	if _, err := c.Write([]byte{Op, 'x'}); err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, fmt.Errorf("read the echo: %w", err)
	}
	return time.Since(start), nil
}

// Serve writes back what it reads from c, after the Op byte, with a plain
// read/write loop through buf (as a small request/response server does),
// until c ends.
func Serve(c net.Conn, buf []byte) {
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
