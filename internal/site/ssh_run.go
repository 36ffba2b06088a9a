package site

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/ssh"
)

// Run runs args on the login node as the command line "exec " + Join(args),
// in a session of its own, and returns its standard output. The exec makes
// the command the session's process, so that a signal sent to the session
// (on cancel) reaches it and its death by a signal is reported as such.
//
// A command whose connection breaks while it runs returns an error wrapping
// ErrConnLost and is not run again: it may or may not have run. A session
// that could not be opened on a broken connection is opened on a new one,
// since nothing ran. Cancelling ctx kills the command. stdin, if not nil,
// must reach EOF for Run to return.
func (s *SSH) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return s.run(ctx, s.cfg.MaxStdout, stdin, args...)
}

// run is Run keeping at most limit bytes of standard output.
func (s *SSH) run(ctx context.Context, limit int, stdin io.Reader, args ...string) ([]byte, error) {
	if err := checkArgs(args); err != nil {
		return nil, fmt.Errorf("ssh run: %w", err)
	}
	name := args[0]
	defer s.activity.begin(ctx, name)()
	select {
	case s.sessions <- struct{}{}:
		defer func() { <-s.sessions }()
	case <-ctx.Done():
		return nil, fmt.Errorf("ssh run %s: waiting for a session: %w", name, ctx.Err())
	}
	c, sess, err := s.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("ssh run %s: %w", name, err)
	}
	s.open.Add(1)
	defer s.open.Add(-1)
	defer sess.Close()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := &capture{limit: limit, onOver: func() { cancel(errStdoutLimit) }}
	stderr := &capture{limit: maxStderr}
	if stdin != nil {
		sess.Stdin = stdin
	}
	sess.Stdout, sess.Stderr = stdout, stderr
	if err := sess.Start("exec " + Join(args)); err != nil {
		if s.lost(ctx, c) {
			return nil, fmt.Errorf("ssh run %s: start: %w: the command may or may not have run", name, ErrConnLost)
		}
		return nil, fmt.Errorf("ssh run %s: start: %w", name, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err = <-waited:
	case <-runCtx.Done():
		// Kill the command; Wait ends on its own once the server closes
		// the session, and its result no longer matters.
		sess.Signal(ssh.SIGKILL)
		sess.Close()
		if errors.Is(context.Cause(runCtx), errStdoutLimit) {
			return nil, fmt.Errorf("ssh run %s: stdout %w (%d bytes)", name, ErrOutputLimit, stdout.limit)
		}
		return nil, fmt.Errorf("ssh run %s: %w", name, ctx.Err())
	}
	if errors.Is(context.Cause(runCtx), errStdoutLimit) {
		return nil, fmt.Errorf("ssh run %s: stdout %w (%d bytes)", name, ErrOutputLimit, stdout.limit)
	}
	return s.result(ctx, c, args, stdout, stderr, err)
}

// result turns how a command ended into Run's result.
func (s *SSH) result(ctx context.Context, c *sshConn, args []string, stdout, stderr *capture, err error) ([]byte, error) {
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return stdout.buf.Bytes(), nil
	case errors.As(err, &exit) && exit.Signal() != "":
		return nil, &SignalError{Args: args, Signal: exit.Signal(), Stderr: stderr.stderrText()}
	case errors.As(err, &exit):
		return nil, &ExitError{Args: args, Code: exit.ExitStatus(), Stderr: stderr.stderrText()}
	case s.lost(ctx, c):
		return nil, fmt.Errorf("ssh run %s: %w: the command may or may not have run", args[0], ErrConnLost)
	default:
		return nil, fmt.Errorf("ssh run %s: %w", args[0], err)
	}
}

// session opens a session on the live connection. A connection found
// broken is dropped and the session opened on a new one. A refused session
// is asked for again, a few times, shortly after: OpenSSH refuses sessions
// beyond its MaxSessions ("connect failed") until it has freed those that
// just ended, which it does a little after telling us they ended.
func (s *SSH) session(ctx context.Context) (*sshConn, *ssh.Session, error) {
	redialed := false
	wait := 10 * time.Millisecond
	for refused := 0; ; {
		c, err := s.conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		sess, err := c.client.NewSession()
		if err == nil {
			return c, sess, nil
		}
		var open *ssh.OpenChannelError
		switch {
		case errors.As(err, &open) && open.Reason != ssh.UnknownChannelType && refused < 8:
			refused++
			s.log.Debug("ssh session refused", "attempt", refused, "retry_in", wait, "error", err)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, nil, fmt.Errorf("open session: %w", ctx.Err())
			}
			wait *= 2
		case !errors.As(err, &open) && !redialed && s.lost(ctx, c):
			redialed = true
		default:
			return nil, nil, fmt.Errorf("open session: %w", err)
		}
	}
}
