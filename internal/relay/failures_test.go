package relay

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestFailureLogThrottles records many failures of two kinds and counts the
// lines: each kind is logged the first time and then every 1000th time.
func TestFailureLogThrottles(t *testing.T) {
	var buf bytes.Buffer
	f := failureLog{log: slog.New(slog.NewTextHandler(&buf, nil))}
	for range 100_000 {
		f.record(ownerRefused, "port", 6379)
	}
	for range 2500 {
		f.record(tunnelDown)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var owner, tunnel int
	for _, l := range lines {
		switch {
		case strings.Contains(l, failureMessages[ownerRefused]):
			owner++
		case strings.Contains(l, failureMessages[tunnelDown]):
			tunnel++
		}
	}
	if owner != 100 || tunnel != 3 || len(lines) != 103 {
		t.Errorf("got %d owner and %d tunnel lines of %d; want 100, 3 of 103", owner, tunnel, len(lines))
	}
	if !strings.Contains(lines[1], "count=1001") {
		t.Errorf("second line: got %q; want count=1001", lines[1])
	}
	if got := f.count(ownerRefused); got != 100_000 {
		t.Errorf("count: got %d; want 100000", got)
	}
}
