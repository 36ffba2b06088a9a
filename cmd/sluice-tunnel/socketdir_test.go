package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWaitSocketDir: the tunnel waits, missing file, empty file and a
// refused value alike, until sluice-vk writes the pod's socket directory,
// and takes it then; a refused value is logged once.
func TestWaitSocketDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "socket-dir")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	got := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		dir, err := waitSocketDir(ctx, file, 5*time.Millisecond, log)
		if err != nil {
			t.Error(err)
		}
		got <- dir
	}()
	const want = "/tmp/sluice/d75a550f2954bd4f5c6fcf5bb401c235"
	for _, content := range []string{"", "\n", "relative/dir", "relative/dir"} {
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
		select {
		case dir := <-got:
			t.Fatalf("took %q from %q; want it to wait", dir, content)
		default:
		}
	}
	if err := os.WriteFile(file, []byte(want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := <-got; dir != want {
		t.Errorf("got %q; want %q", dir, want)
	}
	if n := strings.Count(logs.String(), "socket directory file names no usable directory"); n != 1 {
		t.Errorf("refused value logged %d times; want once:\n%s", n, logs.String())
	}
}

func TestWaitSocketDirEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := waitSocketDir(ctx, filepath.Join(t.TempDir(), "none"), time.Millisecond, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("got no error after ctx ended")
	}
}
