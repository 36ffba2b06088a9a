package site

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// suiteMaxStdout is the MaxStdout that runners given to testRunner have.
const suiteMaxStdout = 1 << 20

// testRunner checks the Runner contract on r, whose commands and files are
// on the same machine; dir is an empty directory there that the runner's
// user owns.
func testRunner(t *testing.T, r Runner, dir string) {
	t.Run("run", func(t *testing.T) { testRun(t, r) })
	t.Run("errors", func(t *testing.T) { testRunErrors(t, r) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, r, 50) })
	t.Run("files", func(t *testing.T) { testFiles(t, r, dir) })
	t.Run("missing", func(t *testing.T) { testMissing(t, r, dir) })
	t.Run("job files", func(t *testing.T) { testJobFiles(t, r, dir) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// trickyArgs are arguments that must arrive verbatim.
var trickyArgs = []string{"", "two words", "it's", `"double"`, "a\nb", "$(id -un)", "`id`",
	"$HOME", "*", "~", "a;b", "x|y", "--flag=1", `back\slash`, "é中", "\t"}

func testRun(t *testing.T, r Runner) {
	ctx := ctxFor(t)
	out, err := r.Run(ctx, nil, append([]string{"printf", `%s\n`}, trickyArgs...)...)
	if err != nil {
		t.Fatalf("printf: %v", err)
	}
	if want := strings.Join(trickyArgs, "\n") + "\n"; string(out) != want {
		t.Errorf("printf output = %q; want %q", out, want)
	}

	out, err = r.Run(ctx, strings.NewReader("from stdin\n"), "cat")
	if err != nil || string(out) != "from stdin\n" {
		t.Errorf("cat with stdin = %q, %v; want %q", out, err, "from stdin\n")
	}

	out, err = r.Run(ctx, nil, "head", "-c", strconv.Itoa(suiteMaxStdout), "/dev/zero")
	if err != nil || len(out) != suiteMaxStdout {
		t.Errorf("output of exactly the limit = %d bytes, %v; want %d bytes", len(out), err, suiteMaxStdout)
	}
}

func testRunErrors(t *testing.T, r Runner) {
	ctx := ctxFor(t)
	args := []string{"sh", "-c", "echo out; echo 'bad thing' >&2; exit 3"}
	_, err := r.Run(ctx, nil, args...)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || exit.Stderr != "bad thing" || !slices.Equal(exit.Args, args) {
		t.Errorf("exit 3 = %v; want an ExitError with code 3, stderr %q and the args", err, "bad thing")
	}

	_, err = r.Run(ctx, nil, "sh", "-c", "echo dying >&2; kill -KILL $$")
	var sig *SignalError
	if !errors.As(err, &sig) || sig.Signal != "KILL" || sig.Stderr != "dying" {
		t.Errorf("kill -KILL = %v; want a SignalError for KILL with stderr %q", err, "dying")
	}

	_, err = r.Run(ctx, nil, "sh", "-c", "head -c 2000000 /dev/zero; echo 'more than the limit' >&2")
	if !errors.Is(err, ErrOutputLimit) {
		t.Errorf("2 MB of output = %v; want ErrOutputLimit", err)
	}
	start := time.Now()
	_, err = r.Run(ctx, nil, "yes")
	if !errors.Is(err, ErrOutputLimit) {
		t.Errorf("endless output = %v; want ErrOutputLimit", err)
	}
	t.Logf("endless output stopped after %v", time.Since(start))

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = r.Run(short, nil, "sleep", "30")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("sleep past the deadline = %v; want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("sleep past the deadline returned after %v; want soon after 300ms", d)
	}

	for _, bad := range [][]string{nil, {""}, {"echo", "a\x00b"}, {"-c", "true"}} {
		if _, err := r.Run(ctx, nil, bad...); err == nil {
			t.Errorf("Run(%q) = nil error; want it refused", bad)
		}
	}
}

func testConcurrent(t *testing.T, r Runner, n int) {
	ctx := ctxFor(t)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			out, err := r.Run(ctx, nil, "sh", "-c", `sleep 0.1; printf '%s' "$1"`, "sh", strconv.Itoa(i))
			if err == nil && string(out) != strconv.Itoa(i) {
				err = fmt.Errorf("got %q; want %q", out, strconv.Itoa(i))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("command %d: %v", i, err)
		}
	}
}

func testFiles(t *testing.T, r Runner, dir string) {
	ctx := ctxFor(t)
	job := path.Join(dir, "ns-uid", "logs")
	for _, tt := range []struct {
		dir  string
		perm fs.FileMode
	}{{job, 0o700}, {path.Join(dir, "shared", "x"), 0o770}} {
		if err := r.MkdirAll(ctx, tt.dir, tt.perm); err != nil {
			t.Fatalf("MkdirAll(%s): %v", tt.dir, err)
		}
		for _, d := range []string{tt.dir, path.Dir(tt.dir)} {
			wantMode(t, r, d, fs.ModeDir|tt.perm)
		}
		if err := r.MkdirAll(ctx, tt.dir, tt.perm); err != nil {
			t.Errorf("MkdirAll(%s) again: %v", tt.dir, err)
		}
	}

	secret := path.Join(dir, "ns-uid", "secret")
	big := make([]byte, 3<<20+17)
	rand.Read(big)
	for _, w := range []struct {
		data []byte
		perm fs.FileMode
	}{{[]byte("first version, longer than the second"), 0o664}, {[]byte("0123456789"), 0o600}, {big, 0o640}, {[]byte{}, 0o600}, {[]byte("0123456789"), 0o600}} {
		if err := r.WriteFile(ctx, secret, w.data, w.perm); err != nil {
			t.Fatalf("WriteFile(%d bytes, %04o): %v", len(w.data), w.perm, err)
		}
		wantMode(t, r, secret, w.perm)
		got, err := r.ReadAt(ctx, secret, 0, len(w.data)+1)
		if err != nil || !bytes.Equal(got, w.data) {
			t.Fatalf("ReadAt after writing %d bytes = %d bytes, %v; want them back", len(w.data), len(got), err)
		}
	}
	for _, tt := range []struct {
		off  int64
		n    int
		want string
	}{{0, 4, "0123"}, {3, 4, "3456"}, {8, 10, "89"}, {10, 5, ""}, {50, 5, ""}, {0, 0, ""}} {
		got, err := r.ReadAt(ctx, secret, tt.off, tt.n)
		if err != nil || string(got) != tt.want {
			t.Errorf("ReadAt(%d, %d) = %q, %v; want %q", tt.off, tt.n, got, err, tt.want)
		}
	}
	if _, err := r.ReadAt(ctx, secret, -1, 4); err == nil {
		t.Error("ReadAt at offset -1 = nil error; want it refused")
	}
	out, err := r.Run(ctx, nil, "ls", "-A", path.Dir(secret))
	if err != nil || string(out) != "logs\nsecret\n" {
		t.Errorf("ls -A after the writes = %q, %v; want only logs and secret (no temporary file left)", out, err)
	}

	if err := r.RemoveAll(ctx, path.Join(dir, "ns-uid")); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if _, err := r.Stat(ctx, job); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after RemoveAll = %v; want ErrNotExist", err)
	}
	if err := r.RemoveAll(ctx, path.Join(dir, "ns-uid")); err != nil {
		t.Errorf("RemoveAll of a missing path = %v; want nil", err)
	}
	for _, bad := range []string{"relative/path", dir + "/../x", "/"} {
		if err := r.RemoveAll(ctx, bad); err == nil {
			t.Errorf("RemoveAll(%q) = nil; want it refused", bad)
		}
	}
}

// wantMode checks a path's mode through Stat and through stat(1).
func wantMode(t *testing.T, r Runner, p string, want fs.FileMode) {
	t.Helper()
	ctx := ctxFor(t)
	fi, err := r.Stat(ctx, p)
	if err != nil {
		t.Fatalf("Stat(%s): %v", p, err)
	}
	if got := fi.Mode() & (fs.ModeDir | fs.ModePerm); got != want {
		t.Errorf("Stat(%s) mode = %v; want %v", p, got, want)
	}
	out, err := r.Run(ctx, nil, "stat", "-c", "%a", p)
	if got, want := strings.TrimSpace(string(out)), strconv.FormatUint(uint64(want.Perm()), 8); err != nil || got != want {
		t.Errorf("stat -c %%a %s = %q, %v; want %q", p, got, err, want)
	}
}

func testMissing(t *testing.T, r Runner, dir string) {
	ctx := ctxFor(t)
	missing := path.Join(dir, "no-such-file")
	_, err := r.ReadAt(ctx, missing, 0, 10)
	checkNotExist(t, "ReadAt", err)
	_, err = r.Stat(ctx, missing)
	checkNotExist(t, "Stat", err)
	err = r.WriteFile(ctx, path.Join(missing, "x"), []byte("x"), 0o600)
	checkNotExist(t, "WriteFile in a missing directory", err)
}

func checkNotExist(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s of a missing path = %v; want ErrNotExist", op, err)
	}
}

// testLogger logs to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
