package kubeletstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"golang.org/x/crypto/ssh"
	utilexec "k8s.io/utils/exec"
)

// fakeSrun records its arguments in $SRUN_LOG and runs what follows "--",
// as srun would on the node.
const fakeSrun = `#!/bin/sh
printf '%s\n' "$@" > "$SRUN_LOG"
while [ "$1" != "--" ]; do shift; done
shift
exec "$@"
`

// runningJob answers RunningJob with one job of RuntimeNone in dir.
type runningJob struct{ dir string }

func (r runningJob) RunningJob(namespace, name string) (provider.RunningJob, error) {
	return provider.RunningJob{
		Ref:        slurm.JobRef{JobID: "42", Dir: r.dir},
		Host:       "node1",
		Containers: []jobscript.Container{{Name: "main", Command: []string{"sleep"}, EnvFile: "env/main"}},
	}, nil
}

// attachIO is api.AttachIO over buffers.
type attachIO struct {
	in       io.Reader
	out, err io.WriteCloser
}

func (a attachIO) Stdin() io.Reader            { return a.in }
func (a attachIO) Stdout() io.WriteCloser      { return a.out }
func (a attachIO) Stderr() io.WriteCloser      { return a.err }
func (a attachIO) TTY() bool                   { return false }
func (a attachIO) Resize() <-chan api.TermSize { return nil }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// execServer is a Server whose login node is an in-process SSH server
// with a fake srun on PATH, and whose job directory holds an env file.
func execServer(t testing.TB) (*Server, string) {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(fakeSrun), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	srunLog := filepath.Join(t.TempDir(), "srun.args")
	t.Setenv("SRUN_LOG", srunLog)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "env"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "env", "main"), []byte("FROM_POD='set by the pod'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := sshxtest.Start(t)
	keys, err := sshx.HostKeys(sshxtest.KnownHosts(t, srv.Addr, srv.HostKey.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	conns := &Conns{Hop: &tunnel.Hop{LoginAddr: srv.Addr, User: "alice", Auth: []ssh.AuthMethod{ssh.PublicKeys(srv.ClientKey)},
		LoginHostKeys: keys, NodeHostKeys: keys}}
	t.Cleanup(func() { conns.Close() })
	return &Server{Jobs: runningJob{dir: dir}, Conns: conns, Runtime: jobscript.RuntimeNone}, srunLog
}

func TestExecCarriesStreamsAndTheExitCode(t *testing.T) {
	s, srunLog := execServer(t)
	var out, errb bytes.Buffer
	io := attachIO{in: strings.NewReader("from stdin"), out: nopCloser{&out}, err: nopCloser{&errb}}
	err := s.Exec(context.Background(), "ns", "pod", "main",
		[]string{"sh", "-c", `echo "$FROM_POD in $(pwd)"; cat; echo oops >&2; exit 3`}, io)
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || !exit.Exited() || exit.ExitStatus() != 3 {
		t.Errorf("got %v; want an ExitError with code 3", err)
	}
	want := "set by the pod in " + s.Jobs.(runningJob).dir + "\nfrom stdin"
	if out.String() != want || errb.String() != "oops\n" {
		t.Errorf("got stdout %q stderr %q; want %q and %q", out.String(), errb.String(), want, "oops\n")
	}
	args, err := os.ReadFile(srunLog)
	if err != nil || !strings.HasPrefix(string(args), "--jobid=42\n--overlap\n--nodelist=node1\n") {
		t.Errorf("srun got %q (%v); want the job's allocation on its batch host", args, err)
	}

	if err := s.Exec(context.Background(), "ns", "pod", "main", []string{"true"}, io); err != nil {
		t.Errorf("got %v for exit code 0; want nil", err)
	}
	if err := s.Exec(context.Background(), "ns", "pod", "other", []string{"true"}, io); err == nil || !strings.Contains(err.Error(), `no container "other"`) {
		t.Errorf("got %v for an unknown container; want it named", err)
	}
}

func TestExecEndsWhenKubectlGoesAway(t *testing.T) {
	s, _ := execServer(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Exec(ctx, "ns", "pod", "main", []string{"sh", "-c", `echo $$ > ` + pidFile + `; exec sleep 600`},
			attachIO{out: nopCloser{io.Discard}, err: nopCloser{io.Discard}})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		t.Logf("exec ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("exec went on 10s after its context ended")
	}
	b, _ := os.ReadFile(pidFile)
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(b))); err == nil {
		t.Errorf("the command (pid %s) still runs after exec ended", bytes.TrimSpace(b))
	}
}

func TestExitResult(t *testing.T) {
	if exitResult(nil) != nil {
		t.Error("got an error for a clean exit")
	}
	other := errors.New("boom")
	if err := exitResult(other); !errors.Is(err, other) {
		t.Errorf("got %v; want boom wrapped", err)
	}
}

func TestFirstSize(t *testing.T) {
	ctx := context.Background()
	sizes := make(chan api.TermSize, 2)
	sizes <- api.TermSize{} // no size: skipped
	sizes <- api.TermSize{Width: 101, Height: 33}
	if got := firstSize(ctx, sizes, time.Second); got != (api.TermSize{Width: 101, Height: 33}) {
		t.Errorf("got %+v; want 101x33", got)
	}

	late := make(chan api.TermSize)
	go func() {
		time.Sleep(50 * time.Millisecond)
		late <- api.TermSize{Width: 120, Height: 40}
	}()
	if got := firstSize(ctx, late, 5*time.Second); got != (api.TermSize{Width: 120, Height: 40}) {
		t.Errorf("got %+v for a size sent after the exec began; want 120x40", got)
	}

	start := time.Now()
	if got := firstSize(ctx, make(chan api.TermSize), 100*time.Millisecond); got != defaultSize {
		t.Errorf("got %+v with no size sent; want the default %+v", got, defaultSize)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("waited %v for a size that never came; want about 100ms", waited)
	}
	closed := make(chan api.TermSize)
	close(closed)
	if got := firstSize(ctx, closed, time.Minute); got != defaultSize {
		t.Errorf("got %+v from a closed queue; want the default", got)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if got := firstSize(done, nil, time.Minute); got != defaultSize {
		t.Errorf("got %+v after the context ended; want the default", got)
	}
}
