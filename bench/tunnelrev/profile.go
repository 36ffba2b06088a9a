//go:build bench

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/sluice-hpc/sluice/bench/internal/child"
)

// profile starts `perf record -g` on each part of the chains (their pids;
// the children socat forks for each connection are followed), writing
// dir/<part>.perf.data; the returned function stops the recorders and waits
// for their files.
func (e *env) profile(ctx context.Context, dir string, chains []*chain) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	var recs []*child.Process
	stop := func() {
		for _, p := range recs {
			// perf writes its file on SIGINT.
			p.Signal(syscall.SIGINT)
		}
		for _, p := range recs {
			<-p.Done()
		}
	}
	for _, c := range chains {
		for _, p := range c.parts {
			out := filepath.Join(dir, p.Name+".perf.data")
			cmd := exec.CommandContext(ctx, "perf", "record", "-F", "499", "-g", "--inherit", "-o", out, "-p", strconv.Itoa(p.Pid()))
			rec, err := child.Start("perf-"+p.Name, cmd, filepath.Join(e.work, "perf-"+p.Name+".log"))
			if err != nil {
				stop()
				return nil, err
			}
			recs = append(recs, rec)
		}
	}
	return stop, nil
}
