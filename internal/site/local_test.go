package site

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain sets a umask that would change every mode the tests ask for,
// so that only an explicit chmod gives the exact modes.
func TestMain(m *testing.M) {
	syscall.Umask(0o027)
	os.Exit(m.Run())
}

func TestLocal(t *testing.T) {
	testRunner(t, &Local{MaxStdout: suiteMaxStdout}, t.TempDir())
}

func TestLocalRunNotFound(t *testing.T) {
	var l Local
	_, err := l.Run(context.Background(), nil, "/no/such/command")
	var exit *ExitError
	if err == nil || errors.As(err, &exit) || !strings.Contains(err.Error(), "local run /no/such/command") {
		t.Errorf("Run of a missing command = %v; want a start error naming it", err)
	}
}

func TestLocalMkdirAllOverFile(t *testing.T) {
	var l Local
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := l.MkdirAll(context.Background(), filepath.Join(file, "sub"), 0o700)
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll under a file = %v; want ENOTDIR", err)
	}
}

func TestLocalCancelledFileOps(t *testing.T) {
	var l Local
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := l.WriteFile(ctx, filepath.Join(t.TempDir(), "x"), []byte("x"), 0o600)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WriteFile with a cancelled context = %v; want Canceled", err)
	}
	if _, err := l.Stat(ctx, "/"); !errors.Is(err, context.Canceled) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat with a cancelled context = %v; want Canceled", err)
	}
}
