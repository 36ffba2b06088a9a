//go:build bench

package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// startCPUProfile profiles the process into file until the returned
// function is called.
func startCPUProfile(file string) (stop func(), err error) {
	out, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := out.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "vk1000: cpu profile:", err)
		}
	}, nil
}

// writeHeapProfile writes the live heap, after a garbage collection, to file.
func writeHeapProfile(file string) error {
	out, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
		out.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return out.Close()
}

// progress prints, every 30 seconds until stopped, how many of the pods
// [from, to) are Running.
func progress(ctx context.Context, t *tracker, from, to int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				t.mu.Lock()
				n := t.countPhase(corev1.PodRunning)
				t.mu.Unlock()
				fmt.Fprintf(os.Stderr, "vk1000: %s: %d of %d pods Running\n", now.Format(time.TimeOnly), n-from, to-from)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
