package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"
)

// socketDirPoll is how often waitSocketDir reads its file.
const socketDirPoll = time.Second

// waitSocketDir returns the pod's socket directory as file names it. The
// shadow's node ConfigMap carries it: sluice-vk names it from the pod's
// salt, which it keeps in the job directory, and writes it with the node
// once the job is submitted, so the file is missing or empty until then.
// It is read every interval until it names a directory checkSocketDir
// takes, or ctx ends. The name never changes for a pod (its salt does
// not), so it is read once.
func waitSocketDir(ctx context.Context, file string, every time.Duration, log *slog.Logger) (string, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	var refused string
	for {
		b, err := os.ReadFile(file)
		dir := strings.TrimSpace(string(b))
		if err == nil && dir != "" {
			cerr := checkSocketDir(dir)
			if cerr == nil {
				return dir, nil
			}
			if dir != refused {
				// told once per value: the file is read every second
				log.Warn("socket directory file names no usable directory; waiting for another", "file", file, "error", cerr)
				refused = dir
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-t.C:
		}
	}
}
