//go:build bench

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a process the benchmark started; its output goes to a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it ended, once done is closed
}

// start starts cmd, its standard error (and output, unless already taken)
// appended to logFile.
func start(name string, cmd *exec.Cmd, logFile string) (*proc, error) {
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
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and, if the process has not ended within 5s,
// SIGKILL; it waits for the end.
func (p *proc) stop() {
	if p == nil || !p.running() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// usage is what a set of process trees holds and has used.
type usage struct {
	procs int
	rssKB int64         // sum of VmRSS
	pssKB int64         // sum of Pss (shared pages split between sharers)
	cpu   time.Duration // user and system time, with that of reaped children
}

// clockTick is USER_HZ, the unit of the times in /proc/PID/stat.
const clockTick = 100

// treeUsage adds up the usage of the processes roots and all their
// descendants.
func treeUsage(roots []int) usage {
	parents := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			parents[pid] = st.ppid
		}
	}
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	for changed := true; changed; {
		changed = false
		for pid, ppid := range parents {
			if !in[pid] && in[ppid] {
				in[pid] = true
				changed = true
			}
		}
	}
	var u usage
	for pid := range in {
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		u.procs++
		u.cpu += st.cpu
		u.rssKB += statusKB(pid, "VmRSS:")
		u.pssKB += rollupKB(pid, "Pss:")
	}
	return u
}

// stat is what the benchmark reads of /proc/PID/stat.
type stat struct {
	ppid int
	cpu  time.Duration
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state): ppid is field 4, utime to cstime 14-17.
	ppid, _ := strconv.Atoi(f[1])
	var ticks int64
	for _, s := range f[11:15] {
		n, _ := strconv.ParseInt(s, 10, 64)
		ticks += n
	}
	return stat{ppid: ppid, cpu: time.Duration(ticks) * time.Second / clockTick}, nil
}

// statusKB reads a "Key:   N kB" line of /proc/PID/status.
func statusKB(pid int, key string) int64 {
	return fileKB(filepath.Join("/proc", strconv.Itoa(pid), "status"), key)
}

// rollupKB reads a "Key:   N kB" line of /proc/PID/smaps_rollup.
func rollupKB(pid int, key string) int64 {
	return fileKB(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), key)
}

func fileKB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				n, _ := strconv.ParseInt(fields[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// sampler records the largest usage of process trees while a test runs.
type sampler struct {
	roots []int
	peak  usage
	stop  context.CancelFunc
	done  chan struct{}
}

// sample starts sampling roots every 100ms until end is called.
func sample(roots []int) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{roots: roots, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			u := treeUsage(roots)
			if u.rssKB > s.peak.rssKB {
				s.peak.rssKB, s.peak.procs = u.rssKB, u.procs
			}
			s.peak.pssKB = max(s.peak.pssKB, u.pssKB)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// end stops sampling and returns the peak.
func (s *sampler) end() usage {
	s.stop()
	<-s.done
	return s.peak
}
