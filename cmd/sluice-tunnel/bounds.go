package main

import (
	"errors"
	"flag"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// forwardBounds are the forward's limits on its clients; 0 is none.
type forwardBounds struct {
	maxConns     int
	maxStalled   int
	idleTimeout  time.Duration
	stallTimeout time.Duration
}

func (b *forwardBounds) define(fs *flag.FlagSet) {
	fs.IntVar(&b.maxConns, "max-conns", tunnel.DefaultMaxConns, "connections carried at once, all ports together, each holding up to 2 MiB of the job's bytes; more are refused; 0 for no limit")
	fs.DurationVar(&b.idleTimeout, "idle-timeout", tunnel.DefaultIdleTimeout, "close a connection that carried nothing either way for this long; 0 for never")
	fs.DurationVar(&b.stallTimeout, "stall-timeout", tunnel.DefaultStallTimeout, "close a connection whose client has not taken the job's next bytes (32 KiB at most) within this time; 0 for never")
	fs.IntVar(&b.maxStalled, "max-stalled", tunnel.DefaultMaxStalled, "connections, of all ports, whose client does not keep up, each holding up to 2 MiB of the job's bytes; one more is closed at once; 0 for no limit")
}

// check refuses negative bounds, naming the flag.
func (b *forwardBounds) check() []error {
	var errs []error
	if b.maxConns < 0 {
		errs = append(errs, errors.New("--max-conns: must not be negative (0 for no limit)"))
	}
	if b.maxStalled < 0 {
		errs = append(errs, errors.New("--max-stalled: must not be negative (0 for no limit)"))
	}
	if b.idleTimeout < 0 {
		errs = append(errs, errors.New("--idle-timeout: must not be negative (0 for never)"))
	}
	if b.stallTimeout < 0 {
		errs = append(errs, errors.New("--stall-timeout: must not be negative (0 for never)"))
	}
	return errs
}

// apply sets f's limits: a flag's 0, none, is a negative value there, whose
// zero means the default.
func (b *forwardBounds) apply(f *tunnel.Forward) {
	f.MaxConns = noneIfZero(b.maxConns)
	f.MaxStalled = noneIfZero(b.maxStalled)
	f.IdleTimeout = noneIfZero(b.idleTimeout)
	f.StallTimeout = noneIfZero(b.stallTimeout)
}

func noneIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
