//go:build bench

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// benchSshd is an sshd of the benchmark's own in the login node's network
// namespace: the rig's login sshd configuration (same host key, users and
// authentication) on another port, with the MaxStartups under test.
//
// The rig's own login sshd cannot be used: its test override file is
// included before its MaxStartups line, and OpenSSH (9.2) keeps the last
// MaxStartups it reads, unlike most keywords, so the override does not
// lower it.
type benchSshd struct {
	addr string // host:port
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startSshd starts it from the rig's rendered login sshd configuration,
// listening on host:port.
func startSshd(ctx context.Context, dir, rigConf, host string, port int, maxStartups string) (*benchSshd, error) {
	conf, err := benchSshdConfig(rigConf, port, filepath.Join(dir, "sshd.pid"), maxStartups)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "sshd.conf")
	if err := os.WriteFile(file, conf, 0o600); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, "/usr/sbin/sshd", "-t", "-f", file).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sshd -t %s: %w\n%s", file, err, out)
	}
	s := &benchSshd{addr: net.JoinHostPort(host, strconv.Itoa(port)), log: filepath.Join(dir, "sshd.log"), done: make(chan struct{})}
	logFile, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = rigbench.InNetns(context.Background(), rigbench.LoginNetns, "/usr/sbin/sshd", "-D", "-e", "-f", file)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start sshd: %w", err)
	}
	go func() { s.cmd.Wait(); logFile.Close(); close(s.done) }()
	for range 100 {
		if data, _ := os.ReadFile(s.log); bytes.Contains(data, []byte("Server listening")) {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("sshd ended at start (see %s)", s.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.stop()
	return nil, fmt.Errorf("sshd not listening within 5s (see %s)", s.log)
}

// benchSshdConfig is the rig's login sshd configuration without its
// override file, on port, with its own pid file and maxStartups.
func benchSshdConfig(rigConf string, port int, pidFile, maxStartups string) ([]byte, error) {
	data, err := os.ReadFile(rigConf)
	if err != nil {
		return nil, fmt.Errorf("rig sshd config: %w", err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# the storm benchmark's sshd, from %s\n", rigConf)
	sc := bufio.NewScanner(bytes.NewReader(data))
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		key, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToLower(key) {
		case "include":
			continue
		case "port":
			line = "Port " + strconv.Itoa(port)
		case "pidfile":
			line = "PidFile " + pidFile
		case "maxstartups":
			line = "MaxStartups " + maxStartups
		}
		seen[strings.ToLower(key)] = true
		fmt.Fprintln(&out, line)
	}
	for _, k := range []string{"port", "pidfile", "maxstartups", "listenaddress"} {
		if !seen[k] {
			return nil, fmt.Errorf("rig sshd config %s has no %s line", rigConf, k)
		}
	}
	return out.Bytes(), sc.Err()
}

// offset is the log's size now: dropped counts the lines written after it.
func (s *benchSshd) offset() (int64, error) {
	st, err := os.Stat(s.log)
	if err != nil {
		return 0, fmt.Errorf("sshd log: %w", err)
	}
	return st.Size(), nil
}

// dropped counts the connections the sshd dropped past MaxStartups since
// the log had size from. OpenSSH logs the first drop of a throttling
// period, and the number dropped in it when the period ends:
//
//	drop connection #3 from [10.251.1.2]:40116 on [10.251.1.2]:2222 past MaxStartups
//	exited MaxStartups throttling after 00:00:01, 12 connections dropped
//
// A period still going on counts its first drop.
func (s *benchSshd) dropped(from int64) (int, error) {
	data, err := os.ReadFile(s.log)
	if err != nil {
		return 0, fmt.Errorf("sshd log: %w", err)
	}
	return countDropped(data[min(from, int64(len(data))):]), nil
}

var throttleEnd = regexp.MustCompile(`exited MaxStartups throttling after \S+, (\d+) connections dropped`)

func countDropped(log []byte) int {
	n, open := 0, false
	for line := range bytes.Lines(log) {
		switch {
		case bytes.Contains(line, []byte("past MaxStartups")):
			open = true
		case throttleEnd.Match(line):
			d, _ := strconv.Atoi(string(throttleEnd.FindSubmatch(line)[1]))
			n += d
			open = false
		}
	}
	if open {
		n++
	}
	return n
}

// stop ends the sshd and the connection processes it forked (its
// children: sshd -D leaves them running when the listener ends).
func (s *benchSshd) stop() error {
	pid := s.cmd.Process.Pid
	children := childrenOf(pid)
	s.cmd.Process.Signal(syscall.SIGTERM)
	for _, c := range children {
		syscall.Kill(c, syscall.SIGTERM)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		return errors.New("sshd: killed after 5s")
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}
