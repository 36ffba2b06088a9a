package site

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrConnLost reports a command whose connection to the site broke
	// while it ran: it may or may not have run, in whole or in part. The
	// runner reconnects on the next call; whether to run the command again
	// is for the caller to decide.
	ErrConnLost = errors.New("connection to the site lost")

	// ErrOutputLimit reports a command that wrote more standard output than
	// the runner keeps; the command was stopped.
	ErrOutputLimit = errors.New("output limit exceeded")

	// ErrClosed reports a call on a runner that was closed.
	ErrClosed = errors.New("site runner closed")
)

// SignalError reports a command that was killed by a signal.
type SignalError struct {
	Args []string
	// Signal is the signal's name without "SIG", as SSH names it ("KILL").
	Signal string
	Stderr string
}

func (e *SignalError) Error() string {
	name := "command"
	if len(e.Args) > 0 {
		name = e.Args[0]
	}
	if e.Stderr == "" {
		return fmt.Sprintf("%s: killed by signal %s", name, e.Signal)
	}
	return fmt.Sprintf("%s: killed by signal %s: %s", name, e.Signal, e.Stderr)
}

// checkArgs refuses what no command line can carry.
func checkArgs(args []string) error {
	if len(args) == 0 || args[0] == "" {
		return errors.New("no command")
	}
	if args[0][0] == '-' {
		return fmt.Errorf("command %q starts with '-'", args[0])
	}
	for i, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d contains a NUL byte", i)
		}
	}
	return nil
}
