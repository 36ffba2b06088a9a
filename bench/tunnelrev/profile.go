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
)

// profile starts `perf record -g` on each part of the chains (their pids;
// the children socat forks for each connection are followed), writing
// dir/<part>.perf.data; the returned function stops the recorders and waits
// for their files.
func (e *env) profile(ctx context.Context, dir string, chains []*chain) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	var recs []*proc
	stop := func() {
		for _, p := range recs {
			// perf writes its file on SIGINT.
			p.cmd.Process.Signal(syscall.SIGINT)
		}
		for _, p := range recs {
			<-p.done
		}
	}
	for _, c := range chains {
		for _, p := range c.parts {
			out := filepath.Join(dir, p.name+".perf.data")
			cmd := exec.CommandContext(ctx, "perf", "record", "-F", "499", "-g", "--inherit", "-o", out, "-p", strconv.Itoa(p.pid()))
			rec, err := start("perf-"+p.name, cmd, filepath.Join(e.work, "perf-"+p.name+".log"))
			if err != nil {
				stop()
				return nil, err
			}
			recs = append(recs, rec)
		}
	}
	return stop, nil
}
