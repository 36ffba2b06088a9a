package site

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Local runs commands and moves files on the machine it runs on, for a
// virtual kubelet on the login node itself. The zero value is ready to use.
type Local struct {
	// MaxStdout is the most standard output Run keeps; a command that
	// writes more is stopped with ErrOutputLimit. If zero, 64 MiB.
	MaxStdout int

	activity Activity // commands in flight
}

var _ Runner = (*Local)(nil)

// Activity returns the runner's commands in flight.
func (l *Local) Activity() *Activity { return &l.activity }

// waitDelay bounds how long Run waits for output pipes held open by a
// command's children after the command itself has ended.
const waitDelay = 5 * time.Second

// Run runs args directly, without a shell.
func (l *Local) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return l.run(ctx, limitOr(l.MaxStdout), stdin, args...)
}

// run is Run keeping at most limit bytes of standard output.
func (l *Local) run(ctx context.Context, limit int, stdin io.Reader, args ...string) ([]byte, error) {
	if err := checkArgs(args); err != nil {
		return nil, fmt.Errorf("local run: %w", err)
	}
	name := args[0]
	defer l.activity.begin(ctx, name)()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := &capture{limit: limit, onOver: func() { cancel(errStdoutLimit) }}
	stderr := &capture{limit: maxStderr}
	cmd := exec.CommandContext(runCtx, name, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if errors.Is(context.Cause(runCtx), errStdoutLimit) {
		return nil, fmt.Errorf("local run %s: stdout %w (%d bytes)", name, ErrOutputLimit, stdout.limit)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("local run %s: %w", name, ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success():
		return stdout.buf.Bytes(), nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil, &SignalError{Args: args, Signal: signalName(ws.Signal()), Stderr: stderr.stderrText()}
		}
		return nil, &ExitError{Args: args, Code: ee.ExitCode(), Stderr: stderr.stderrText()}
	default:
		return nil, fmt.Errorf("local run %s: %w", name, err)
	}
}

func limitOr(n int) int {
	if n <= 0 {
		return defaultMaxStdout
	}
	return n
}

// signalNames are the names SSH gives signals (RFC 4254 section 6.10).
var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "ABRT", syscall.SIGALRM: "ALRM", syscall.SIGFPE: "FPE",
	syscall.SIGHUP: "HUP", syscall.SIGILL: "ILL", syscall.SIGINT: "INT",
	syscall.SIGKILL: "KILL", syscall.SIGPIPE: "PIPE", syscall.SIGQUIT: "QUIT",
	syscall.SIGSEGV: "SEGV", syscall.SIGTERM: "TERM", syscall.SIGUSR1: "USR1",
	syscall.SIGUSR2: "USR2",
}

func signalName(sig syscall.Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return sig.String()
}
