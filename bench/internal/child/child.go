//go:build bench

// Package child runs the processes a benchmark starts: each logs to a file
// of its own and is stopped with SIGTERM, then SIGKILL.
package child

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// stopWait is how long Stop waits after SIGTERM before SIGKILL.
const stopWait = 5 * time.Second

// Process is a process a benchmark started.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it ended, once done is closed
}

// Start starts cmd, its standard error (and standard output, unless cmd
// already has one) appended to logFile. If cmd.SysProcAttr makes it the
// leader of a process group of its own (Setpgid), Stop ends the whole
// group.
func Start(name string, cmd *exec.Cmd, logFile string) (*Process, error) {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd.Stderr = f
	if cmd.Stdout == nil {
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Running tells whether the process has not ended yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended (as exec.Cmd.Wait says), once Done is
// closed.
func (p *Process) Err() error { return p.err }

// Signal sends sig to the process, or to its group if it leads one.
func (p *Process) Signal(sig syscall.Signal) {
	if p.group() {
		_ = syscall.Kill(-p.Pid(), sig)
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

// Stop sends SIGTERM and, if the process has not ended within a few
// seconds, SIGKILL; it waits for the end. For a group leader, the signals
// go to the group, and a last SIGKILL ends what stayed in it (an ssh's jump
// process, say). It returns an error if SIGKILL was needed. Stop on nil
// does nothing.
func (p *Process) Stop() error {
	if p == nil {
		return nil
	}
	var err error
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		err = fmt.Errorf("%s did not stop on SIGTERM: killed", p.Name)
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
	if p.group() {
		p.Signal(syscall.SIGKILL)
	}
	return err
}

func (p *Process) group() bool {
	return p.cmd.SysProcAttr != nil && p.cmd.SysProcAttr.Setpgid
}
