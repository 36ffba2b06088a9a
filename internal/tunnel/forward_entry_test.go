package tunnel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadEntryDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "socket-dir")
	cases := []struct {
		content string
		want    string
		err     string
	}{
		{"/tmp/sluice-sock/0123abcd\n", "/tmp/sluice-sock/0123abcd", ""},
		{"", "", "not known yet"},
		{" \n", "", "not known yet"},
		{"relative/dir", "", "absolute, clean"},
		{"/tmp/../etc", "", "absolute, clean"},
		{"/tmp/a\x01b", "", "control characters"},
	}
	for _, tc := range cases {
		if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readEntryDir(file)
		var entry *entryError
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: got %q, %v; want %q", tc.content, got, err, tc.want)
		case tc.err != "" && (!errors.As(err, &entry) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: got %q, %v; want an entry error with %q", tc.content, got, err, tc.err)
		}
	}
	if _, err := readEntryDir(filepath.Join(t.TempDir(), "none")); !errors.As(err, new(*entryError)) {
		t.Errorf("missing file: got %v; want an entry error", err)
	}
	if got := refusal(&entryError{errors.New("refused")}); got != RefusedDial {
		t.Errorf("refusal of an entry error: got %q; want %q", got, RefusedDial)
	}
}

// TestWatchEntryDir: the status follows the file, the way a renewal
// rewrites it, and says "" while it names no directory.
func TestWatchEntryDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "socket-dir")
	status := NewStatus("forward")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchEntryDir(ctx, file, 5*time.Millisecond, status)
	}()
	defer func() { cancel(); <-done }()
	for _, content := range []string{"/tmp/sock/a-r0\n", "/tmp/sock/a-r1\n", "", "relative"} {
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		want, _ := readEntryDir(file)
		deadline := time.Now().Add(5 * time.Second)
		for status.Snapshot().EntryDir != want {
			if time.Now().After(deadline) {
				t.Fatalf("after writing %q: status entry directory %q; want %q", content, status.Snapshot().EntryDir, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
