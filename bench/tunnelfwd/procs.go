//go:build bench

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a process the benchmark started, in its own process group, its
// output going to a log file. Its standard input is a pipe the benchmark
// holds, closed when it is stopped.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// startProc starts argv with its standard error (and standard output
// unless stdout is set) appended to logFile.
func startProc(name, logFile string, stdout io.Writer, argv ...string) (*proc, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = log
	cmd.Stdout = log
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends p and every process of its group: standard input closed and
// SIGTERM, then SIGKILL after a few seconds.
func (p *proc) stop() {
	p.stdin.Close()
	pgid := p.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		fmt.Fprintf(os.Stderr, "tunnelfwd: %s did not stop on SIGTERM: killing it\n", p.name)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Descendants that stayed in the group (an ssh jump process).
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// family returns pid and its descendants.
func family(pid int) []int {
	parents := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		st, err := readStat(d)
		if err != nil {
			continue
		}
		parents[st.ppid] = append(parents[st.ppid], st.pid)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, parents[out[i]]...)
	}
	return out
}

// stat holds the fields of /proc/PID/stat the benchmark reads.
type stat struct {
	pid, ppid int
	cpuTicks  int64 // utime + stime, every thread
}

func readStat(file string) (stat, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return stat{}, err
	}
	// pid (comm) state ppid ... : comm may hold spaces, so split after ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return stat{}, fmt.Errorf("%s: malformed", file)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return stat{}, fmt.Errorf("%s: malformed", file)
	}
	var st stat
	st.pid, _ = strconv.Atoi(strings.TrimSpace(string(b[:open])))
	st.ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	st.cpuTicks = utime + stime
	return st, nil
}

// clockTick is the length of a /proc/PID/stat CPU tick (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time used so far by pids together.
func cpuTime(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		st, err := readStat(fmt.Sprintf("/proc/%d/stat", pid))
		if err == nil {
			ticks += st.cpuTicks
		}
	}
	return time.Duration(ticks) * clockTick
}

// memory is the resident memory of a set of processes, in bytes.
type memory struct {
	rss, peak int64 // VmRSS and VmHWM, summed
}

func memoryOf(pids []int) (memory, error) {
	var m memory
	for _, pid := range pids {
		rss, hwm, err := readStatus(pid)
		if err != nil {
			return m, err
		}
		m.rss += rss
		m.peak += hwm
	}
	return m, nil
}

// readStatus returns VmRSS and VmHWM of pid, in bytes.
func readStatus(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "VmRSS" && k != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("memory of %d: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	if rss == 0 {
		return 0, 0, errors.New("memory of " + strconv.Itoa(pid) + ": no VmRSS (a zombie?)")
	}
	return rss, hwm, nil
}
