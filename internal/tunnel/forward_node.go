package tunnel

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// nodeWatch follows the node file. The file is a ConfigMap key mounted as a
// directory: the kubelet replaces it by swapping a symlink, so it is read
// again by path each time rather than watched through an open descriptor.
//
// A file that cannot be read or names no valid node leaves the node known
// before unchanged (logged once per distinct error); an empty file means the
// job has no node (yet), and clients are refused.
type nodeWatch struct {
	file     string
	every    time.Duration
	log      *slog.Logger
	onChange func(node string) // called on each change, outside mu

	mu      sync.Mutex
	cur     string
	lastErr string
}

// node returns the current node, "" if none is known.
func (w *nodeWatch) node() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// run polls the file until ctx ends.
func (w *nodeWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.poll()
		}
	}
}

// poll reads the file once and records a change.
func (w *nodeWatch) poll() {
	node, err := ReadNode(w.file)
	w.mu.Lock()
	if err != nil {
		report := err.Error() != w.lastErr
		w.lastErr = err.Error()
		w.mu.Unlock()
		if report {
			w.log.Warn("node file unusable: keeping the last node", "file", w.file, "node", w.node(), "error", err)
		}
		return
	}
	w.lastErr = ""
	old := w.cur
	w.cur = node
	w.mu.Unlock()
	if node == old {
		return
	}
	w.log.Info("node changed", "from", old, "to", node)
	if w.onChange != nil {
		w.onChange(node)
	}
}
