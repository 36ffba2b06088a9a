package socks

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
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var f failureLog
	for range 100_000 {
		f.record(log, failureKind(StageDial), "dest", "redis:6379")
	}
	for range 2500 {
		f.record(log, failAccept)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var dial, accept int
	for _, l := range lines {
		switch {
		case strings.Contains(l, failureMessages[StageDial]):
			dial++
		case strings.Contains(l, failureMessages[failAccept]):
			accept++
		}
	}
	if dial != 100 || accept != 3 || len(lines) != 103 {
		t.Errorf("got %d dial and %d accept lines of %d; want 100, 3 of 103", dial, accept, len(lines))
	}
	if !strings.Contains(lines[1], "count=1001") {
		t.Errorf("second line: got %q; want count=1001", lines[1])
	}
	if got := f.count(failureKind(StageDial)); got != 100_000 {
		t.Errorf("count: got %d; want 100000", got)
	}
	for k, m := range failureMessages {
		if m == "" {
			t.Errorf("failure kind %d has no message", k)
		}
	}
}
