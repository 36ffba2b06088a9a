package vkslog

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// errKey finds a log call giving an error under a key other than
// ErrorKey: "err", err or slog.Any("err", …).
var errKey = regexp.MustCompile(`"err",\s|slog\.(Any|String)\("err"`)

// Every log line of sluice carries its error under one key, ErrorKey: no
// source file logs one under "err".
func TestOneErrorKeyInSources(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for i, line := range bytes.Split(src, []byte("\n")) {
			if errKey.Match(line) {
				t.Errorf("%s:%d logs an error under \"err\"; use %q: %s", path, i+1, ErrorKey, bytes.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d Go files; want the whole tree", n)
	}
}

// An error logged under "err" (logr's key, and so klog's) comes out under
// ErrorKey.
func TestErrKeyRenamed(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger(&buf, FormatText, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	l.With("err", "a").Info("m", "err", "b", slog.Group("g", "err", "c"))
	if got, want := strings.TrimSpace(buf.String()), `error=a error=b g.err=c`; !strings.HasSuffix(got, want) {
		t.Errorf("got %q; want it to end %q", got, want)
	}
}
