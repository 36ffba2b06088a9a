//go:build rig

package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
)

// What a hostile job can leave in its own directory (it runs as the site
// account), read through one SSH connection to the rig's login node, whose
// OpenSSH sftp-server serves one request at a time: each read must be
// refused or bounded at once, and the same connection must go on serving
// file operations afterwards.

// jobDir makes an empty job directory for a pod that has no job, and removes
// it when the test ends.
func (e *rigEnv) jobDir(t *testing.T) JobRef {
	t.Helper()
	ref := e.c.Ref("rig", newUID(t), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.c.Site.MkdirAll(ctx, ref.Dir, dirMode); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.c.Site.RemoveAll(ctx, ref.Dir); err != nil {
			t.Errorf("RemoveAll: %v", err)
		}
	})
	return ref
}

// run runs a command on the login node or fails the test.
func (e *rigEnv) run(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.c.Site.Run(ctx, nil, args...); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
}

// mkfifo makes named pipes and, when the test ends, opens each for reading
// and writing once, so that a reader blocked on one (a wedged sftp-server)
// goes on before the directory is removed.
func (e *rigEnv) mkfifo(t *testing.T, fifos ...string) {
	t.Helper()
	e.run(t, append([]string{"mkfifo"}, fifos...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		script := `for f; do [ -p "$f" ] && { exec 3<>"$f"; exec 3>&-; }; done; true`
		e.c.Site.Run(ctx, nil, append([]string{"sh", "-c", script, "sh"}, fifos...)...)
	})
}

// within runs fn with a context of timeout d, and fails the test if fn has
// not returned soon after d.
func within(t *testing.T, d time.Duration, what string, fn func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		t.Logf("%s: %v after %v", what, err, time.Since(start).Round(time.Millisecond))
		return err
	case <-time.After(d + 5*time.Second):
		t.Fatalf("%s: no answer %v after its deadline", what, 5*time.Second)
		return nil
	}
}

// stillServes checks that the connection answers a write, a read and a
// stat within a few seconds.
func (e *rigEnv) stillServes(t *testing.T, ref JobRef) {
	t.Helper()
	probe := path.Join(ref.Dir, "probe")
	err := within(t, 5*time.Second, "file operations afterwards", func(ctx context.Context) error {
		if err := e.c.Site.WriteFile(ctx, probe, []byte("still here"), fileMode); err != nil {
			return err
		}
		got, err := e.c.Site.ReadAt(ctx, probe, 0, 100)
		if err == nil && string(got) != "still here" {
			err = fmt.Errorf("read back %q", got)
		}
		if err != nil {
			return err
		}
		_, err = e.c.Site.Stat(ctx, ref.Dir)
		return err
	})
	if err != nil {
		t.Fatalf("the site connection no longer serves file operations: %v", err)
	}
}

// readLogs reads at most 4 MiB of a container's logs within 10 seconds.
func (e *rigEnv) readLogs(t *testing.T, ref JobRef, container string, opts LogOptions) (string, error) {
	t.Helper()
	var out []byte
	err := within(t, 10*time.Second, "logs of "+container, func(ctx context.Context) error {
		r, err := e.c.Logs(ctx, ref, container, opts)
		if err != nil {
			return err
		}
		defer r.Close()
		out, err = io.ReadAll(io.LimitReader(r, 4<<20))
		return err
	})
	return string(out), err
}

func wantNotRegular(t *testing.T, what string, got string, err error, kind string) {
	t.Helper()
	if !errors.Is(err, site.ErrNotRegular) || !strings.Contains(err.Error(), kind) || got != "" {
		t.Errorf("%s = %d bytes %.40q, %v; want ErrNotRegular naming %s", what, len(got), got, err, kind)
	}
}

func TestRigNamedPipesInTheJobDirectory(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		ref := e.jobDir(t)
		e.mkfifo(t, path.Join(ref.Dir, "main.log"), path.Join(ref.Dir, jobscript.JobOutFile))

		got, err := e.readLogs(t, ref, "main", LogOptions{Tail: -1})
		wantNotRegular(t, "logs of a named pipe main.log", got, err, "named pipe")
		e.stillServes(t, ref)
		got, err = e.readLogs(t, ref, "main", LogOptions{Tail: 10, Follow: true})
		wantNotRegular(t, "followed logs of a named pipe main.log", got, err, "named pipe")
		e.stillServes(t, ref)

		var msg string
		err = within(t, 10*time.Second, "failure message", func(ctx context.Context) (err error) {
			msg, err = e.c.FailureMessage(ctx, ref)
			return err
		})
		wantNotRegular(t, "FailureMessage of a named pipe job.out", msg, err, "named pipe")
		e.stillServes(t, ref)
	})
}

// TestRigNamedPipeJobID submits a pod whose job directory holds a named pipe
// job.id (read again at every restart of the virtual kubelet): it is not
// read, and is replaced by the job's ID.
func TestRigNamedPipeJobID(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		job := e.shJob(t, nil, [][2]string{{"main", "true"}})
		dir := jobscript.JobDir(e.c.DataRoot, job.Namespace, job.UID)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.c.Site.MkdirAll(ctx, dir, dirMode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e.c.Site.RemoveAll(ctx, dir) // Submit failed: nothing else removes it
		})
		e.mkfifo(t, path.Join(dir, jobscript.JobIDFile))
		var ref JobRef
		within(t, 20*time.Second, "submit", func(context.Context) error {
			ref = e.submit(t, job)
			return nil
		})
		e.stillServes(t, ref)
		fi, err := e.c.Site.Stat(ctx, path.Join(dir, jobscript.JobIDFile))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("job.id after Submit: %v, %v; want a regular file", fi, err)
		}
		if id, err := e.c.readID(ctx, dir); err != nil || id != ref.JobID {
			t.Errorf("job.id holds %q, %v; want %s", id, err, ref.JobID)
		}
	})
}

func TestRigLinksInTheJobDirectory(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		ref := e.jobDir(t)
		peer := e.jobDir(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.c.Site.MkdirAll(ctx, path.Join(peer.Dir, "env"), dirMode); err != nil {
			t.Fatal(err)
		}
		secret := path.Join(peer.Dir, "env", "main")
		if err := e.c.Site.WriteFile(ctx, secret, []byte("export PASSWORD=hunter2\n"), fileMode); err != nil {
			t.Fatal(err)
		}
		e.run(t, "ln", "-s", "/dev/zero", path.Join(ref.Dir, "main.log"))
		e.run(t, "ln", "-s", secret, path.Join(ref.Dir, "side.log"))
		e.run(t, "ln", "-s", secret, path.Join(ref.Dir, jobscript.JobOutFile))

		for _, c := range []string{"main", "side"} {
			for _, opts := range []LogOptions{{Tail: -1}, {Tail: 5}} {
				got, err := e.readLogs(t, ref, c, opts)
				wantNotRegular(t, fmt.Sprintf("logs %+v of %s.log, a link", opts, c), got, err, "symbolic link")
			}
		}
		msg, err := e.c.FailureMessage(ctx, ref)
		wantNotRegular(t, "FailureMessage of a job.out linked to another pod's env", msg, err, "symbolic link")
		e.stillServes(t, ref)
	})
}

// readCounter counts the bytes ReadAt returns.
type readCounter struct {
	site.Runner
	n atomic.Int64
}

func (r *readCounter) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	data, err := r.Runner.ReadAt(ctx, p, off, n)
	r.n.Add(int64(len(data)))
	return data, err
}

func TestRigBigJobOutIsReadFromItsTail(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		ref := e.jobDir(t)
		var out strings.Builder
		out.WriteString("sluice: an old message\n")
		for out.Len() < 4<<20 {
			out.WriteString("pre-exec chatter that goes on and on\n")
		}
		out.WriteString("sluice: reverse tunnel: port 6379 taken\n+ trace\n")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := e.c.Site.WriteFile(ctx, path.Join(ref.Dir, jobscript.JobOutFile), []byte(out.String()), fileMode); err != nil {
			t.Fatal(err)
		}
		counter := &readCounter{Runner: e.c.Site}
		c := &Client{Site: counter, DataRoot: e.c.DataRoot, Logger: e.c.Logger}
		msg, err := c.FailureMessage(ctx, ref)
		if err != nil || msg != "reverse tunnel: port 6379 taken" {
			t.Errorf("FailureMessage = %q, %v; want the last sluice line", msg, err)
		}
		if n := counter.n.Load(); n > failureWindow+1 {
			t.Errorf("read %d bytes of a 4 MiB job.out; want at most %d", n, failureWindow+1)
		}
	})
}

func TestRigBigJobIDIsNotRead(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		ref := e.jobDir(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		big := "12345\n" + strings.Repeat("\n", 2<<20)
		if err := e.c.Site.WriteFile(ctx, path.Join(ref.Dir, jobscript.JobIDFile), []byte(big), idMode); err != nil {
			t.Fatal(err)
		}
		counter := &readCounter{Runner: e.c.Site}
		c := &Client{Site: counter, DataRoot: e.c.DataRoot, Logger: e.c.Logger}
		if id, err := c.readID(ctx, ref.Dir); err != nil || id != "" {
			t.Errorf("readID of a 2 MiB job.id = %q, %v; want it ignored", id, err)
		}
		if n := counter.n.Load(); n > maxIDFile+1 {
			t.Errorf("read %d bytes of job.id; want at most %d", n, maxIDFile+1)
		}
	})
}
