//go:build bench

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/child"
	"github.com/sluice-hpc/sluice/bench/internal/procstat"
)

// proc is a process the benchmark started, in its own process group, its
// output going to a log file. Its standard input is a pipe the benchmark
// holds, closed when it is stopped.
type proc struct {
	*child.Process
	stdin io.WriteCloser
}

// startProc starts cmd, killed if this program dies, with its standard
// error (and standard output unless cmd has one) appended to logFile.
func startProc(name, logFile string, cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p, err := child.Start(name, cmd, logFile)
	if err != nil {
		stdin.Close()
		return nil, err
	}
	return &proc{Process: p, stdin: stdin}, nil
}

func (p *proc) exited() bool { return !p.Running() }

// stop ends p and every process of its group: standard input closed and
// SIGTERM, then SIGKILL after a few seconds.
func (p *proc) stop() {
	p.stdin.Close()
	if err := p.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelfwd:", err)
	}
}

// cpuTime is the CPU time used so far by pids together.
func cpuTime(pids []int) time.Duration {
	var cpu time.Duration
	for _, pid := range pids {
		if st, err := procstat.ReadStat(pid); err == nil {
			cpu += st.CPU
		}
	}
	return cpu
}

// memoryOf is the resident memory of pids together.
func memoryOf(pids []int) (procstat.Memory, error) {
	var m procstat.Memory
	for _, pid := range pids {
		pm, err := procstat.ReadMemory(pid)
		if err != nil {
			return m, err
		}
		m.RSS += pm.RSS
		m.HWM += pm.HWM
	}
	return m, nil
}
