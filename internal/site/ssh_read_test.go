package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

// fakeDD puts a dd that runs script first on the PATH of the commands the
// test server runs.
func fakeDD(t *testing.T, script string) {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "dd"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestSSHReadAtGivesUpAfterReadTimeout(t *testing.T) {
	real, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("no dd:", err)
	}
	hang := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(hang, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fakeDD(t, fmt.Sprintf("[ -e %s ] && exec sleep 60\nexec %s \"$@\"", Quote(hang), Quote(real)))
	srv := sshxtest.Start(t)
	cfg := testSSHConfig(t, srv)
	cfg.ReadTimeout = 300 * time.Millisecond
	r := newSSH(t, cfg)
	dir := t.TempDir()
	file := filepath.Join(dir, "main.log")
	if err := os.WriteFile(file, []byte("some output\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = r.ReadAt(context.Background(), file, 0, 100)
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("ReadAt through a dd that hangs = %v; want it abandoned after ReadTimeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("ReadAt through a dd that hangs returned after %v; want soon after 300ms", took)
	}
	if err := os.Remove(hang); err != nil {
		t.Fatal(err)
	}
	stillServes(t, r, dir)
}

func TestSSHReadAtReadsNoMoreThanAsked(t *testing.T) {
	// A dd that ignores count: the runner keeps no more than n bytes.
	fakeDD(t, "exec head -c 100000 /dev/zero")
	srv := sshxtest.Start(t)
	r := newSSH(t, testSSHConfig(t, srv))
	file := filepath.Join(t.TempDir(), "main.log")
	if err := os.WriteFile(file, make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := r.ReadAt(ctxFor(t), file, 0, 10)
	if !errors.Is(err, ErrOutputLimit) || len(data) != 0 {
		t.Errorf("ReadAt(10 bytes) of a dd writing 100000 = %d bytes, %v; want ErrOutputLimit", len(data), err)
	}
}

func TestSSHReadAtSkipsCommandAtEndOfFile(t *testing.T) {
	fakeDD(t, "echo dd ran >&2; exit 1")
	srv := sshxtest.Start(t)
	r := newSSH(t, testSSHConfig(t, srv))
	file := filepath.Join(t.TempDir(), "main.log")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{10, 11} {
		if data, err := r.ReadAt(ctxFor(t), file, off, 10); err != nil || len(data) != 0 {
			t.Errorf("ReadAt at offset %d of a 10-byte file = %q, %v; want nothing, without running dd", off, data, err)
		}
	}
	if _, err := r.ReadAt(ctxFor(t), file, 0, 10); err == nil || !strings.Contains(err.Error(), "dd ran") {
		t.Errorf("ReadAt at offset 0 = %v; want dd's error", err)
	}
}

func TestDDError(t *testing.T) {
	exit := func(code int, stderr string) error {
		return &ExitError{Args: []string{"env"}, Code: code, Stderr: stderr}
	}
	for _, tt := range []struct {
		err  error
		want error
		text string
	}{
		{exit(1, "dd: failed to open '/d/main.log': No such file or directory"), fs.ErrNotExist, "No such file"},
		{exit(1, "dd: failed to open '/d/main.log': Too many levels of symbolic links"), ErrNotRegular, "a symbolic link"},
		{exit(1, "dd: error reading '/d/main.log': Resource temporarily unavailable"), ErrNotRegular, "temporarily"},
		{exit(1, "dd: error reading '/d/main.log': Is a directory"), ErrNotRegular, "directory"},
		{exit(1, "dd: failed to open '/d/main.log': Permission denied"), fs.ErrPermission, "denied"},
		{exit(127, "env: 'dd': No such file or directory"), nil, "the site has no dd"},
		{exit(1, "dd: something else"), nil, "something else"},
	} {
		got := ddError(tt.err)
		if tt.want != nil && !errors.Is(got, tt.want) || !strings.Contains(got.Error(), tt.text) {
			t.Errorf("ddError(%v) = %v; want %v containing %q", tt.err, got, tt.want, tt.text)
		}
	}
	if got := ddError(exit(127, "x")); errors.Is(got, fs.ErrNotExist) {
		t.Errorf("ddError of a missing dd = %v; must not read as a missing file", got)
	}
}
