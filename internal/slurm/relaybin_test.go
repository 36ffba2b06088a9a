package slurm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-hpc/sluice/internal/site"
)

// callCounter counts every call a site.Runner gets, commands and file
// operations alike.
type callCounter struct {
	site.Runner
	mu    sync.Mutex
	calls []string
}

func (c *callCounter) note(op string) {
	c.mu.Lock()
	c.calls = append(c.calls, op)
	c.mu.Unlock()
}

func (c *callCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return calls
}

func (c *callCounter) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	c.note("run " + args[0])
	return c.Runner.Run(ctx, stdin, args...)
}

func (c *callCounter) MkdirAll(ctx context.Context, p string, perm fs.FileMode) error {
	c.note("mkdir")
	return c.Runner.MkdirAll(ctx, p, perm)
}

func (c *callCounter) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	c.note("write")
	return c.Runner.WriteFile(ctx, p, data, perm)
}

func (c *callCounter) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	c.note("stat")
	return c.Runner.Stat(ctx, p)
}

func relayFile(dataRoot string, binary []byte) string {
	sum := sha256.Sum256(binary)
	return filepath.Join(dataRoot, ".bin", "sluice-relay-"+hex.EncodeToString(sum[:])[:16])
}

func TestPlaceRelay(t *testing.T) {
	root := t.TempDir()
	cc := &callCounter{Runner: &site.Local{}}
	c := &Client{Site: cc, DataRoot: root, Logger: slog.New(&testLog{t: t})}
	binary := []byte("#!/bin/sh\necho relay v1\n")
	ctx := context.Background()

	got, err := c.PlaceRelay(ctx, binary)
	if err != nil {
		t.Fatalf("PlaceRelay: %v", err)
	}
	if want := relayFile(root, binary); got != want {
		t.Fatalf("PlaceRelay = %s; want %s", got, want)
	}
	if calls := cc.take(); !strings.Contains(strings.Join(calls, ","), "write") {
		t.Errorf("first PlaceRelay made calls %v; want a write", calls)
	}
	wantMode(t, filepath.Dir(got), fs.ModeDir|0o700)
	wantMode(t, got, 0o500)
	if data, _ := os.ReadFile(got); string(data) != string(binary) {
		t.Errorf("placed %q; want %q", data, binary)
	}

	again, err := c.PlaceRelay(ctx, binary)
	if err != nil || again != got {
		t.Fatalf("second PlaceRelay = %s, %v; want %s", again, err, got)
	}
	if calls := cc.take(); len(calls) != 0 {
		t.Errorf("second PlaceRelay made calls %v; want none", calls)
	}

	// A new client (a restarted virtual kubelet) finds the file in place
	// and checks it on the site without writing it again.
	c2 := &Client{Site: cc, DataRoot: root, Logger: slog.New(&testLog{t: t})}
	if p, err := c2.PlaceRelay(ctx, binary); err != nil || p != got {
		t.Fatalf("PlaceRelay of a new client = %s, %v; want %s", p, err, got)
	}
	calls := strings.Join(cc.take(), ",")
	if !strings.Contains(calls, "run sha256sum") || strings.Contains(calls, "write") {
		t.Errorf("PlaceRelay of a placed binary made calls %s; want sha256sum and no write", calls)
	}

	// Another version goes beside it.
	v2 := []byte("#!/bin/sh\necho relay v2\n")
	p2, err := c.PlaceRelay(ctx, v2)
	if err != nil || p2 == got || p2 != relayFile(root, v2) {
		t.Fatalf("PlaceRelay of v2 = %s, %v", p2, err)
	}
}

func TestPlaceRelayReplacesAMismatch(t *testing.T) {
	root := t.TempDir()
	binary := []byte("the relay")
	file := relayFile(root, binary)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("corrupt"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := &Client{Site: &site.Local{}, DataRoot: root, Logger: slog.New(&testLog{t: t})}
	got, err := c.PlaceRelay(context.Background(), binary)
	if err != nil || got != file {
		t.Fatalf("PlaceRelay = %s, %v; want %s", got, err, file)
	}
	if data, _ := os.ReadFile(file); string(data) != string(binary) {
		t.Errorf("after PlaceRelay the file holds %q; want %q", data, binary)
	}
	wantMode(t, file, 0o500)
	wantMode(t, filepath.Dir(file), fs.ModeDir|0o700)
}

func TestPlaceRelayWithoutSha256sum(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c := &Client{Site: &site.Local{}, DataRoot: t.TempDir(), Logger: slog.New(&testLog{t: t})}
	_, err := c.PlaceRelay(context.Background(), []byte("relay"))
	if err == nil || !strings.Contains(err.Error(), "no sha256sum") {
		t.Fatalf("PlaceRelay without sha256sum: %v; want an error saying so", err)
	}
	// The failure is not kept: once the tool is there, it works.
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/bin:/bin")
	if _, err := c.PlaceRelay(context.Background(), []byte("relay")); err != nil {
		t.Errorf("PlaceRelay after the failure: %v", err)
	}
}

func TestPlaceRelayRemoteSha256sumMissing(t *testing.T) {
	// Over SSH a missing program is the shell's exit status 127.
	fs := newFakeSite()
	c := &Client{Site: fs, DataRoot: "/data"}
	_, err := c.PlaceRelay(context.Background(), []byte("relay"))
	if err == nil || !strings.Contains(err.Error(), "no sha256sum") {
		t.Fatalf("PlaceRelay: %v; want an error naming sha256sum", err)
	}
}

func TestPlaceRelayConcurrent(t *testing.T) {
	root := t.TempDir()
	cc := &callCounter{Runner: &site.Local{}}
	c := &Client{Site: cc, DataRoot: root, Logger: slog.New(&testLog{t: t})}
	binary := []byte("relay binary")
	var wg sync.WaitGroup
	paths := make([]string, 8)
	for i := range paths {
		wg.Go(func() {
			p, err := c.PlaceRelay(context.Background(), binary)
			if err != nil {
				t.Errorf("PlaceRelay: %v", err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	writes := 0
	for _, call := range cc.take() {
		if call == "write" {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("8 concurrent calls wrote %d times; want once", writes)
	}
	for _, p := range paths {
		if p != relayFile(root, binary) {
			t.Errorf("path %q; want %q", p, relayFile(root, binary))
		}
	}
}

func TestPlaceRelayRefuses(t *testing.T) {
	c := &Client{Site: &site.Local{}, DataRoot: t.TempDir()}
	if _, err := c.PlaceRelay(context.Background(), nil); err == nil {
		t.Error("PlaceRelay of an empty binary: no error")
	}
	bad := &Client{Site: &site.Local{}, DataRoot: "relative"}
	if _, err := bad.PlaceRelay(context.Background(), []byte("x")); err == nil {
		t.Error("PlaceRelay with a relative data root: no error")
	}
}

func wantMode(t *testing.T, p string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s has mode %v; want %v", p, fi.Mode(), want)
	}
}
