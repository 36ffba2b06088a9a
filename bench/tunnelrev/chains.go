//go:build bench

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/child"
	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// chain is one way for the job to reach the servers, across a round trip
// added between the cluster and the login node (for direct, between the
// client and the servers): the client connects to echo (the Go server)
// and redis.
type chain struct {
	name  string
	rtt   time.Duration
	echo  string
	redis string
	// parts are the processes the chain adds on the node and the cluster
	// side, whose memory and CPU are measured; none for the direct path.
	parts []*child.Process
	// site finds the processes a sluice chain's sessions run on the site
	// (the holder, a user-space sshd, srun and its steps), measured apart
	// from parts; nil for the other chains.
	site func() []int
}

// id names the chain in the results: its name, and its round trip if one
// is added.
func (c *chain) id() string {
	return wan.Label(c.name, c.rtt)
}

// roots returns the pids of the chain's parts.
func (c *chain) roots() []int {
	pids := make([]int, len(c.parts))
	for i, p := range c.parts {
		pids[i] = p.Pid()
	}
	return pids
}

// Chain names, as the report writes them.
const (
	chainSluice    = "sluice"
	chainUserspace = "sluice-userspace"
	chainSrun      = "sluice-srun"
	chainOpenSSH   = "OpenSSH+socat"
	// chainOpenSSHGCM is the OpenSSH chain with aes128-gcm, sluice's
	// cipher (OpenSSH's own first choice is chacha20-poly1305).
	chainOpenSSHGCM = "OpenSSH-gcm+socat"
	chainDirect     = "direct"
)

// env is everything the benchmark started, for the chains and for cleanup.
type env struct {
	rig   *rigbench.Rig
	work  string // the work directory: binaries, logs, ssh config
	relay string // binaries
	tun   string
	self  string

	procs []*child.Process // started, stopped in reverse order
	dirs  []string         // socket directories made
	jobs  []string         // Slurm jobs submitted, cancelled at the end

	hostEcho   string // the Go server on the cluster side
	directHost string // an address of the login node the compute node reaches
	// direct is the chain to the copies of the servers on directHost, once
	// they run, without a round trip added.
	direct *chain
	// holder is the Slurm job the srun chains' sessions run in, and the
	// file that names it, once submitted.
	holder, holderFile string
}

// run starts cmd as a part named name, logging to the work directory.
func (e *env) run(name string, cmd *exec.Cmd) (*child.Process, error) {
	p, err := child.Start(name, cmd, filepath.Join(e.work, name+".log"))
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, p)
	return p, nil
}

// cleanup stops every process started, last first, cancels the Slurm jobs
// submitted and removes the socket directories.
func (e *env) cleanup() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		_ = e.procs[i].Stop()
	}
	for _, job := range e.jobs {
		if err := e.cancelJob(job); err != nil {
			fmt.Fprintf(os.Stderr, "tunnelrev: %v\n", err)
		}
	}
	for _, d := range e.dirs {
		os.RemoveAll(d)
	}
}

// logTail returns the end of a part's log, for an error message.
func (e *env) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.work, name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// startServer starts cmd, this program's server, and returns the address
// it prints.
func (e *env) startServer(name string, cmd *exec.Cmd) (string, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if _, err := e.run(name, cmd); err != nil {
		return "", err
	}
	addr, err := firstLine(out)
	if err != nil {
		return "", fmt.Errorf("%s: no address: %w: %s", name, err, e.logTail(name))
	}
	return addr, nil
}

// findDirectHost returns the login node's address on the compute node's
// link: the one address the compute node reaches outside itself.
func (e *env) findDirectHost(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+rigbench.LoginNetns, "ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		return "", fmt.Errorf("login node's addresses: %w", err)
	}
	node := net.ParseIP(e.rig.NodeAddr)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "inet" {
				continue
			}
			ip, n, err := net.ParseCIDR(f[i+1])
			if err == nil && n.Contains(node) && !ip.Equal(node) {
				return ip.String(), nil
			}
		}
	}
	return "", fmt.Errorf("the login node has no address on the compute node's link (%s)", e.rig.NodeAddr)
}

// startDirect starts, once, copies of the servers on the login node's
// address on the compute node's link (the compute node reaches nothing
// else): the Go server and a Redis with the cluster Redis's settings; and
// returns the chain to them across rtt, through two delaying relays on the
// node's loopback if rtt is not 0.
func (e *env) startDirect(ctx context.Context, rtt time.Duration) (*chain, error) {
	if e.direct == nil {
		var err error
		if e.directHost, err = e.findDirectHost(ctx); err != nil {
			return nil, err
		}
		if e.direct, err = e.startDirectServers(ctx); err != nil {
			return nil, err
		}
	}
	if rtt == 0 {
		return e.direct, nil
	}
	c := &chain{name: chainDirect, rtt: rtt}
	var err error
	if c.echo, err = e.startWAN(ctx, "wan-"+c.id()+"-echo", rigbench.NodeNetns, e.direct.echo, rtt); err != nil {
		return nil, err
	}
	if c.redis, err = e.startWAN(ctx, "wan-"+c.id()+"-redis", rigbench.NodeNetns, e.direct.redis, rtt); err != nil {
		return nil, err
	}
	return c, nil
}

func (e *env) startDirectServers(ctx context.Context) (*chain, error) {
	echo, err := e.startServer("direct-server", e.rig.AsUser(ctx, rigbench.LoginNetns, e.self, "serve", "-listen", net.JoinHostPort(e.directHost, "0")))
	if err != nil {
		return nil, err
	}
	var redisAddr string
	for try := 0; ; try++ {
		addr := net.JoinHostPort(e.directHost, strconv.Itoa(20000+rand.IntN(10000)))
		host, port, _ := net.SplitHostPort(addr)
		p, err := e.run("direct-redis", e.rig.AsUser(ctx, rigbench.LoginNetns, "redis-server", "--bind", host, "--port", port,
			"--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", e.work, "--logfile", ""))
		if err != nil {
			return nil, err
		}
		if err := e.waitRedis(ctx, addr, p); err == nil {
			redisAddr = addr
			break
		} else if try == 2 {
			return nil, fmt.Errorf("direct redis: %w: %s", err, e.logTail("direct-redis"))
		}
	}
	return &chain{name: chainDirect, echo: echo, redis: redisAddr}, nil
}

// waitRedis waits until a Redis answers PING at addr from the compute node,
// or p ends.
func (e *env) waitRedis(ctx context.Context, addr string, p *child.Process) error {
	host, port, _ := net.SplitHostPort(addr)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !p.Running() {
			return errors.New("redis-server ended")
		}
		out, _ := e.rig.AsUser(ctx, rigbench.NodeNetns, "redis-cli", "-h", host, "-p", port, "ping").Output()
		if strings.TrimSpace(string(out)) == "PONG" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = p.Stop()
	return errors.New("no PONG within 10s")
}

// relayPorts are the ports the job's side listens on: for the Go server and
// for Redis. Every chain uses the same ports on its own address.
type relayPorts struct{ echo, redis int }

func pickPorts() relayPorts {
	p := 30000 + rand.IntN(9999)
	return relayPorts{echo: p, redis: p + 1}
}

// startOpenSSH starts the chain a user would build by hand, name: `ssh -J
// login node -N -R sock:dest` for each endpoint, through lg, and socat as
// the relay on addr, as the job's user on the compute node. Its parts'
// logs are named after id.
func (e *env) startOpenSSH(ctx context.Context, name, id, addr string, lg login, ports relayPorts, cipher string) (*chain, error) {
	dir, err := socketDir(e.rig)
	if err != nil {
		return nil, err
	}
	e.dirs = append(e.dirs, dir)
	cfg, err := e.sshConfig(id, cipher, lg)
	if err != nil {
		return nil, err
	}
	sshLog, socatLog := id+"-ssh", id+"-socat-"
	ssh, err := e.run(sshLog, exec.CommandContext(ctx, "ssh", "-F", cfg, "-N",
		"-J", e.rig.User+"@login", e.rig.User+"@"+e.rig.Node,
		"-R", sockPath(dir, ports.echo)+":"+e.hostEcho,
		"-R", sockPath(dir, ports.redis)+":"+e.rig.Redis))
	if err != nil {
		return nil, err
	}
	c := &chain{name: name, parts: []*child.Process{ssh},
		echo: net.JoinHostPort(addr, strconv.Itoa(ports.echo)), redis: net.JoinHostPort(addr, strconv.Itoa(ports.redis))}
	if err := e.waitFiles(ctx, c, []string{sockPath(dir, ports.echo), sockPath(dir, ports.redis)}); err != nil {
		return nil, fmt.Errorf("ssh -R: %w: %s", err, e.logTail(sshLog))
	}
	for i, port := range []int{ports.echo, ports.redis} {
		s, err := e.run(socatLog+strconv.Itoa(i), e.rig.AsUser(ctx, rigbench.NodeNetns, "socat",
			fmt.Sprintf("TCP-LISTEN:%d,bind=%s,fork,reuseaddr", port, addr), "UNIX-CONNECT:"+sockPath(dir, port)))
		if err != nil {
			return nil, err
		}
		c.parts = append(c.parts, s)
	}
	if err := e.waitUp(ctx, c, nil); err != nil {
		return nil, fmt.Errorf("OpenSSH chain: %w\nssh: %s\nsocat: %s", err, e.logTail(sshLog), e.logTail(socatLog+"0"))
	}
	return c, nil
}

// sshConfig writes the ssh client's configuration, id.ssh_config: the
// login node at lg, the key, and the pinned host keys of both hops,
// checked strictly. With -J, options reach the jump's own ssh only through
// a file.
func (e *env) sshConfig(id, cipher string, lg login) (string, error) {
	path := filepath.Join(e.work, id+".ssh_config")
	host, port, err := net.SplitHostPort(lg.addr)
	if err != nil {
		return "", fmt.Errorf("ssh config: %w", err)
	}
	var ciphers string
	if cipher != "" {
		ciphers = "  Ciphers " + cipher + "\n"
	}
	cfg := fmt.Sprintf(`Host login
  HostName %s
  Port %s
  UserKnownHostsFile %s
Host %s
  UserKnownHostsFile %s
  StreamLocalBindUnlink yes
  ExitOnForwardFailure yes
Host *
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  StrictHostKeyChecking yes
  GlobalKnownHostsFile /dev/null
  BatchMode yes
%s`, host, port, lg.knownHosts, e.rig.Node, e.rig.NodeKnownHosts, e.rig.User, e.rig.Key, ciphers)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("ssh config: %w", err)
	}
	return path, nil
}

func sockPath(dir string, port int) string {
	return filepath.Join(dir, "rev-"+strconv.Itoa(port)+".sock")
}

// waitFiles waits until each path exists, while every part of c runs.
func (e *env) waitFiles(ctx context.Context, c *chain, paths []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing := ""
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil {
				missing = p
				break
			}
		}
		if missing == "" {
			return nil
		}
		for _, p := range c.parts {
			if !p.Running() {
				return fmt.Errorf("%s ended: %v", p.Name, p.Err())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s missing after 30s", missing)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitUp waits for paths, then for an echo through the chain.
func (e *env) waitUp(ctx context.Context, c *chain, paths []string) error {
	if err := e.waitFiles(ctx, c, paths); err != nil {
		return err
	}
	_, err := e.client(ctx, c.echo, testProbe, "-duration", "20s")
	return err
}
