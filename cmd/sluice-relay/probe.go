package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice-hpc/sluice/internal/relay"
)

// exitProbeFailed is --probe's status when the job's listener answered
// and the check failed.
const exitProbeFailed = 5

// headerList collects --header.
type headerList []string

func (h *headerList) String() string { return fmt.Sprint([]string(*h)) }

func (h *headerList) Set(s string) error {
	*h = append(*h, s)
	return nil
}

// probe runs p once and returns the exit status, saying on stderr why a
// check did not pass: the batch script shows it in the job's output.
func probe(p *relay.Probe, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := p.Run(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "sluice-relay:", err)
	var perr *relay.ProbeError
	if errors.As(err, &perr) {
		return exitRefused
	}
	return exitProbeFailed
}
