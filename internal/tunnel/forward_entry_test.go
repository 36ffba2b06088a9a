package tunnel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
