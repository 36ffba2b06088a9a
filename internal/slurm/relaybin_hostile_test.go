package slurm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// TestPlaceRelayReplacesANamedPipe: a job (it runs as the site account) can
// put a named pipe, or a link to one, where the relay goes; placing the relay
// must replace it without reading it (sha256sum would wait for a writer).
func TestPlaceRelayReplacesANamedPipe(t *testing.T) {
	for _, link := range []bool{false, true} {
		root := t.TempDir()
		binary := []byte("the relay")
		file := relayFile(root, binary)
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		fifo := file
		if link {
			fifo = filepath.Join(root, "pipe")
			if err := os.Symlink(fifo, file); err != nil {
				t.Fatal(err)
			}
		}
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		c := &Client{Site: &site.Local{}, DataRoot: root, Logger: slog.New(&testLog{t: t})}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := c.PlaceRelay(ctx, binary)
		cancel()
		if err != nil || got != file {
			t.Fatalf("PlaceRelay over a named pipe (link %v) = %s, %v; want %s", link, got, err, file)
		}
		if data, _ := os.ReadFile(file); string(data) != string(binary) {
			t.Errorf("after PlaceRelay the file holds %q; want %q", data, binary)
		}
	}
}
