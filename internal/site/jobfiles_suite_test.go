package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"
)

// testJobFiles checks that reads are safe on what a hostile job can leave
// where sluice expects its output: a named pipe with no writer, symbolic
// links to /dev/zero and to another pod's file, a directory. Each read
// must be refused promptly, and the runner must go on serving other file
// operations afterwards (with OpenSSH's sftp-server, one blocked open stops
// every later request of the session).
func testJobFiles(t *testing.T, r Runner, dir string) {
	jobDir := path.Join(dir, "ns-hostile")
	peer := path.Join(dir, "ns-peer", "env")
	mustMkdir(t, r, jobDir)
	mustMkdir(t, r, path.Dir(peer))
	if err := r.WriteFile(ctxFor(t), peer, []byte("export SECRET=hunter2\n"), 0o600); err != nil {
		t.Fatalf("WriteFile(%s): %v", peer, err)
	}

	var fifos []string
	for _, name := range []string{"main.log", "job.out", "job.id"} {
		fifos = append(fifos, path.Join(jobDir, name))
	}
	if _, err := r.Run(ctxFor(t), nil, append([]string{"mkfifo"}, fifos...)...); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	t.Cleanup(func() { unblockFIFOs(t, r, fifos) })
	for _, fifo := range fifos {
		refused(t, r, fifo, "a named pipe", fs.ModeNamedPipe)
		stillServes(t, r, jobDir)
	}

	links := map[string]string{"zero.log": "/dev/zero", "peer.log": peer, "dir.log": path.Dir(peer)}
	for name, target := range links {
		p := path.Join(jobDir, name)
		if _, err := r.Run(ctxFor(t), nil, "ln", "-s", target, p); err != nil {
			t.Fatalf("ln -s %s %s: %v", target, p, err)
		}
		refused(t, r, p, "a symbolic link", fs.ModeSymlink)
	}
	stillServes(t, r, jobDir)

	sub := path.Join(jobDir, "sub.log")
	mustMkdir(t, r, sub)
	refused(t, r, sub, "a directory", fs.ModeDir)

	// Removing the job directory removes the links, never what they point
	// to, and does not open the pipes.
	if _, err := r.Run(ctxFor(t), nil, "ln", "-s", path.Dir(peer), path.Join(sub, "peer-dir")); err != nil {
		t.Fatalf("ln -s: %v", err)
	}
	err := within(t, 10*time.Second, func(ctx context.Context) error { return r.RemoveAll(ctx, jobDir) })
	if err != nil {
		t.Fatalf("RemoveAll(%s): %v", jobDir, err)
	}
	if _, err := r.Stat(ctxFor(t), jobDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after RemoveAll = %v; want ErrNotExist", err)
	}
	if got, err := r.ReadAt(ctxFor(t), peer, 0, 100); err != nil || string(got) != "export SECRET=hunter2\n" {
		t.Errorf("the peer's file after removing a directory linking to it = %q, %v; want it intact", got, err)
	}
}

// refused checks that ReadAt of p fails at once with ErrNotRegular naming
// the kind of file, and that Stat describes p itself as of type typ.
func refused(t *testing.T, r Runner, p, kind string, typ fs.FileMode) {
	t.Helper()
	var data []byte
	err := within(t, 10*time.Second, func(ctx context.Context) error {
		var err error
		data, err = r.ReadAt(ctx, p, 0, 4096)
		return err
	})
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), kind) || data != nil {
		t.Errorf("ReadAt(%s) = %q, %v; want ErrNotRegular naming %s", p, data, err, kind)
	}
	var fi fs.FileInfo
	err = within(t, 5*time.Second, func(ctx context.Context) error {
		var err error
		fi, err = r.Stat(ctx, p)
		return err
	})
	if err != nil || fi.Mode().Type() != typ {
		t.Errorf("Stat(%s) = %v, %v; want the path itself, of type %v", p, fi, err, typ)
	}
}

// stillServes checks that r answers file operations within a short bound:
// a write, a read and a stat in dir.
func stillServes(t *testing.T, r Runner, dir string) {
	t.Helper()
	probe := path.Join(dir, "probe")
	err := within(t, 5*time.Second, func(ctx context.Context) error {
		if err := r.WriteFile(ctx, probe, []byte("still here"), 0o600); err != nil {
			return err
		}
		got, err := r.ReadAt(ctx, probe, 0, 100)
		if err != nil {
			return err
		}
		if string(got) != "still here" {
			return fmt.Errorf("read back %q", got)
		}
		_, err = r.Stat(ctx, dir)
		return err
	})
	if err != nil {
		t.Fatalf("file operations after a refused read: %v", err)
	}
}

// within runs fn with a context of timeout d and fails the test if fn does
// not return soon after d.
func within(t *testing.T, d time.Duration, fn func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		if took := time.Since(start); err != nil && took > d/2 {
			t.Errorf("failed after %v (%v); want a prompt answer", took.Round(time.Millisecond), err)
		}
		return err
	case <-time.After(d + 2*time.Second):
		t.Fatalf("no answer %v after the deadline of %v", 2*time.Second, d)
		return nil
	}
}

func mustMkdir(t *testing.T, r Runner, dir string) {
	t.Helper()
	if err := r.MkdirAll(ctxFor(t), dir, 0o700); err != nil {
		t.Fatalf("MkdirAll(%s): %v", dir, err)
	}
}

// unblockFIFOs opens each named pipe for reading and writing and closes it
// again, through a command: a reader blocked in its open (a wedged
// sftp-server) then sees the end of the pipe and goes on.
func unblockFIFOs(t *testing.T, r Runner, fifos []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append([]string{"sh", "-c", `for f; do [ -p "$f" ] && { exec 3<>"$f"; exec 3>&-; }; done; true`, "sh"}, fifos...)
	if _, err := r.Run(ctx, nil, args...); err != nil {
		t.Logf("unblock named pipes: %v", err)
	}
}
