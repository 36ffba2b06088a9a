//go:build bench

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/echo"
	"github.com/sluice-hpc/sluice/bench/internal/procstat"
	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// Names of the paths from the client to the job server.
const (
	pathSluice     = "sluice"      // sluice-tunnel forward on the host
	pathOpenSSH    = "openssh"     // ssh -J login node -L, OpenSSH's default ciphers
	pathOpenSSHGCM = "openssh-gcm" // the same with aes128-gcm, sluice's cipher
	pathDirect     = "direct"      // the client on the node, on the server's loopback
)

// path is one way from the client to the job server.
type path struct {
	name  string
	addr  string // where the client connects
	netns string // the client's network namespace; "" for the host's
	proc  *proc  // the tunnel; nil for direct
	log   string // the tunnel's log file
}

// pids returns the tunnel's processes (an ssh client and its jump
// process), none for a direct path.
func (p *path) pids() []int {
	if p.proc == nil {
		return nil
	}
	return procstat.Descendants(p.proc.Pid())
}

func (p *path) stop() {
	if p.proc != nil {
		p.proc.stop()
	}
}

// startSluice runs sluice-tunnel forward on the host's 127.0.0.1:port, to
// port on the node's loopback.
func startSluice(r *rigbench.Rig, bin, dir string, port int) (*path, error) {
	nodeFile := filepath.Join(dir, "node")
	if err := os.WriteFile(nodeFile, []byte(r.Node+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("sluice-tunnel: node file: %w", err)
	}
	p := &path{name: pathSluice, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), log: filepath.Join(dir, "sluice-tunnel.log")}
	var err error
	p.proc, err = startProc("sluice-tunnel", p.log, exec.Command(bin, "forward",
		"--login="+r.LoginAddr, "--user="+r.User, "--key="+r.Key,
		"--login-known-hosts="+r.KnownHosts, "--node-known-hosts="+r.NodeKnownHosts,
		"--node-file="+nodeFile, "--target=node", "--listen=127.0.0.1", "--ports="+strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// startOpenSSH runs `ssh -J user@login user@node -L` from the host's
// 127.0.0.1:localPort to port on the node's loopback, with the rig's key
// and pinned known_hosts in a config file (-o options do not reach the
// jump process). ciphers, if not empty, replaces OpenSSH's default list.
func startOpenSSH(r *rigbench.Rig, name, dir string, localPort, port int, ciphers string) (*path, error) {
	cfg := filepath.Join(dir, name+".ssh_config")
	var b strings.Builder
	fmt.Fprintf(&b, "Host login\n  HostName %s\n", r.LoginHost)
	fmt.Fprintf(&b, "Host *\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n", r.User, r.Key)
	fmt.Fprintf(&b, "  UserKnownHostsFile %s %s\n  GlobalKnownHostsFile /dev/null\n", r.KnownHosts, r.NodeKnownHosts)
	b.WriteString("  StrictHostKeyChecking yes\n  BatchMode yes\n  ControlMaster no\n  ControlPath none\n")
	if ciphers != "" {
		fmt.Fprintf(&b, "  Ciphers %s\n", ciphers)
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("%s: config: %w", name, err)
	}
	p := &path{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(localPort)), log: filepath.Join(dir, name+".log")}
	var err error
	p.proc, err = startProc(name, p.log, exec.Command("ssh", "-F", cfg, "-N", "-o", "ExitOnForwardFailure=yes",
		"-L", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", localPort, port),
		"-J", r.User+"@login", r.User+"@"+r.Node))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// direct is the client on the node, connecting to the server's loopback.
func direct(port int) *path {
	return &path{name: pathDirect, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), netns: rigbench.NodeNetns}
}

// waitReady waits until a byte goes through p and back.
func waitReady(p *path, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if p.proc != nil && p.proc.exited() {
			return fmt.Errorf("%s: exited (see %s)", p.name, p.log)
		}
		if _, err = echo.RoundTrip(p.addr); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: not ready within %v (see %s): %w", p.name, timeout, p.log, err)
}
