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
	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// Names of the paths from the client to the job server.
const (
	pathSluice     = "sluice"      // sluice-tunnel forward on the host
	pathOpenSSH    = "openssh"     // ssh -J login node -L, OpenSSH's default ciphers
	pathOpenSSHGCM = "openssh-gcm" // the same with aes128-gcm, sluice's cipher
	pathDirect     = "direct"      // the client on the node, on the server's loopback
)

// path is one way from the client to the job server, across a round
// trip added by a delaying relay (none if rtt is 0).
type path struct {
	name  string
	rtt   time.Duration
	addr  string // where the client connects
	netns string // the client's network namespace; "" for the host's
	proc  *proc  // the tunnel; nil for direct
	wan   *proc  // the delaying relay; nil if rtt is 0
	log   string // the tunnel's log file
}

// id names the path in the records: its name, and its round trip if one
// is added.
func (p *path) id() string {
	return wan.Label(p.name, p.rtt)
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
	if p.wan != nil {
		p.wan.stop()
	}
}

// login is how a tunnel reaches the login node: its address, and the
// known_hosts file that pins the login node's key there.
type login struct {
	addr, knownHosts string
}

// startSluice runs sluice-tunnel forward on the host's listen:port, to
// port on the node's loopback, through lg.
func startSluice(r *rigbench.Rig, bin, dir string, lg login, listen string, port int) (*path, error) {
	nodeFile := filepath.Join(dir, "node")
	if err := os.WriteFile(nodeFile, []byte(r.Node+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("sluice-tunnel: node file: %w", err)
	}
	p := &path{name: pathSluice, addr: net.JoinHostPort(listen, strconv.Itoa(port)), log: filepath.Join(dir, "sluice-tunnel-"+listen+".log")}
	var err error
	p.proc, err = startProc("sluice-tunnel", p.log, exec.Command(bin, "forward",
		"--login="+lg.addr, "--user="+r.User, "--key="+r.Key,
		"--login-known-hosts="+lg.knownHosts, "--node-known-hosts="+r.NodeKnownHosts,
		"--node-file="+nodeFile, "--target=node", "--listen="+listen, "--ports="+strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// startOpenSSH runs `ssh -J user@login user@node -L` from the host's
// 127.0.0.1:localPort to port on the node's loopback, through lg, with the
// rig's key and pinned known_hosts in a config file (-o options do not
// reach the jump process). ciphers, if not empty, replaces OpenSSH's
// default list.
func startOpenSSH(r *rigbench.Rig, name, dir string, lg login, localPort, port int, ciphers string) (*path, error) {
	cfg := filepath.Join(dir, fmt.Sprintf("%s-%d.ssh_config", name, localPort))
	host, loginPort, err := net.SplitHostPort(lg.addr)
	if err != nil {
		return nil, fmt.Errorf("%s: login address: %w", name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Host login\n  HostName %s\n  Port %s\n", host, loginPort)
	fmt.Fprintf(&b, "Host *\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n", r.User, r.Key)
	fmt.Fprintf(&b, "  UserKnownHostsFile %s %s\n  GlobalKnownHostsFile /dev/null\n", lg.knownHosts, r.NodeKnownHosts)
	b.WriteString("  StrictHostKeyChecking yes\n  BatchMode yes\n  ControlMaster no\n  ControlPath none\n")
	if ciphers != "" {
		fmt.Fprintf(&b, "  Ciphers %s\n", ciphers)
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("%s: config: %w", name, err)
	}
	p := &path{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(localPort)), log: filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, localPort))}
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
			return fmt.Errorf("%s: exited (see %s)", p.id(), p.log)
		}
		if _, err = echo.RoundTrip(p.addr); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: not ready within %v (see %s): %w", p.id(), timeout, p.log, err)
}
