package hostnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is a container's running process, the leader of its own process
// group.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	state  *os.ProcessState
}

// startProcess starts spec through the init helper at initPath, in a new
// mount namespace and process group, with env as its whole environment and
// stdout and stderr as its output. The process is killed if the host node
// dies.
func startProcess(initPath string, spec initSpec, env []string, stdout, stderr *os.File) (*process, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	cmd := exec.Command(initPath, initArg, string(js))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:      true,
		Unshareflags: syscall.CLONE_NEWNS, // the fork then makes / private
		Pdeathsig:    syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait() //nolint:errcheck // the exit status is in ProcessState
		p.state = cmd.ProcessState
		// what the container's command left in its group goes with it
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // the group may be gone
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process ID (and process group ID).
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *process) Exited() <-chan struct{} { return p.exited }

// stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the process to exit.
func (p *process) stop(grace time.Duration) {
	if err := syscall.Kill(-p.Pid(), syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		<-p.exited
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
	}
	syscall.Kill(-p.Pid(), syscall.SIGKILL) //nolint:errcheck // it may have exited meanwhile
	<-p.exited
}

// exitStatus is the container's exit code as a kubelet reports it (128+N
// for a signal) and the signal, if one ended it.
func (p *process) exitStatus() (code int32, signal syscall.Signal) {
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	if !ok {
		return int32(p.state.ExitCode()), 0
	}
	if ws.Signaled() {
		return 128 + int32(ws.Signal()), ws.Signal()
	}
	return int32(ws.ExitStatus()), 0
}
