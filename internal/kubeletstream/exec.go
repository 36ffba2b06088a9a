package kubeletstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"golang.org/x/crypto/ssh"
	utilexec "k8s.io/utils/exec"
)

// stopGrace is how long an exec's srun has, after SIGTERM, to end its
// step before it is killed.
const stopGrace = 5 * time.Second

// firstSizeWait bounds the wait for kubectl's first terminal size, which
// travels on its own stream and may reach sluice just after the exec.
const firstSizeWait = 2 * time.Second

// defaultSize is the terminal's size when kubectl sent none in time.
var defaultSize = api.TermSize{Width: 80, Height: 24}

var _ api.ContainerExecHandlerFunc = (*Server)(nil).Exec

// Exec runs cmd in container of the pod's running job: srun into the job's
// allocation on its batch host (jobscript.Runtime.ExecArgv), run in an SSH
// session on the login node, with a pseudo-terminal when attach asks for
// one. Standard streams and terminal resizes are carried; the command's
// exit code comes back as a utilexec.ExitError. When ctx ends (kubectl went
// away) srun is sent SIGTERM, which ends its step, then SIGKILL.
func (s *Server) Exec(ctx context.Context, namespace, pod, container string, cmd []string, attach api.AttachIO) error {
	if s.Conns == nil {
		return ErrNoSite
	}
	job, err := s.Jobs.RunningJob(namespace, pod)
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	c, ok := job.Container(container)
	if !ok {
		return fmt.Errorf("exec: pod %s/%s has no container %q in its job", namespace, pod, container)
	}
	argv, err := s.Runtime.ExecArgv(c, cmd, jobscript.ExecOptions{JobID: string(job.Ref.JobID), Host: job.Host, JobDir: job.Ref.Dir, TTY: attach.TTY(),
		Site: s.Site, RuntimeOptions: job.RuntimeOptions})
	if err != nil {
		return err
	}
	login, err := s.Conns.Login(ctx)
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	sess, err := login.NewSession()
	if err != nil {
		return fmt.Errorf("exec: login node session: %w", err)
	}
	defer sess.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wire(sess, attach, cancel)
	if attach.TTY() {
		// srun --pty gives the step the size of its own terminal when it
		// starts, and misses a window change that comes before its pty
		// thread is ready for it: the first size must be the pty's own.
		size := firstSize(ctx, attach.Resize(), firstSizeWait)
		modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
		if err := sess.RequestPty("xterm", int(size.Height), int(size.Width), modes); err != nil {
			return fmt.Errorf("exec: pty: %w", err)
		}
	}
	if err := sess.Start("exec " + site.Join(argv)); err != nil {
		return fmt.Errorf("exec: start srun: %w", err)
	}
	if attach.TTY() {
		go resize(ctx, sess, attach.Resize())
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		err = stop(sess, waited)
	}
	return exitResult(err)
}

// ErrNoSite is exec's answer on a node without the site connection it
// needs (local site access, or no pinned node host keys).
var ErrNoSite = errors.New("exec needs the SSH connection to the login node and Network.SSH.NodeKnownHostsFile")

// wire connects the session's standard streams to attach's. A failed write
// to kubectl (it went away) cancels the exec.
func wire(sess *ssh.Session, attach api.AttachIO, cancel context.CancelFunc) {
	if in := attach.Stdin(); in != nil {
		sess.Stdin = in
	}
	if out := attach.Stdout(); out != nil {
		sess.Stdout = &cancelWriter{w: out, cancel: cancel}
	}
	if errw := attach.Stderr(); errw != nil {
		sess.Stderr = &cancelWriter{w: errw, cancel: cancel}
	}
}

// firstSize is the first usable terminal size kubectl sends, or
// defaultSize when none came within wait (a client that sends no size).
func firstSize(ctx context.Context, sizes <-chan api.TermSize, wait time.Duration) api.TermSize {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case sz, ok := <-sizes:
			if !ok {
				return defaultSize
			}
			if sz.Width > 0 && sz.Height > 0 {
				return sz
			}
		case <-t.C:
			return defaultSize
		case <-ctx.Done():
			return defaultSize
		}
	}
}

// resize passes each later terminal size kubectl sends on to the
// session's pty; srun --pty passes it on to the step's (one that comes
// while srun is still starting is seen at the next change).
func resize(ctx context.Context, sess *ssh.Session, sizes <-chan api.TermSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			if sz.Width > 0 && sz.Height > 0 {
				_ = sess.WindowChange(int(sz.Height), int(sz.Width))
			}
		}
	}
}

// stop ends srun: SIGTERM (srun ends its step), then SIGKILL and the
// session closed if it is still there after stopGrace.
func stop(sess *ssh.Session, waited <-chan error) error {
	_ = sess.Signal(ssh.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C:
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
		return errors.New("exec: srun did not end within 5s of SIGTERM: killed")
	}
}

// exitResult turns how srun ended into Exec's result: its exit code as a
// utilexec.ExitError, which kubectl reports as the command's.
func exitResult(err error) error {
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.Signal() != "":
		return fmt.Errorf("exec: srun ended by signal %s", exit.Signal())
	case errors.As(err, &exit):
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", exit.ExitStatus()), Code: exit.ExitStatus()}
	}
	return fmt.Errorf("exec: %w", err)
}

// cancelWriter writes to kubectl and cancels the exec when that fails.
type cancelWriter struct {
	w      io.Writer
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cancelWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.once.Do(c.cancel)
	}
	return n, err
}
