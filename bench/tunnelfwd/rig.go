//go:build bench

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/rigenv"
)

// nodeNetns is the rig's compute node's network namespace.
const nodeNetns = "sluice-node"

// rig is what the benchmark needs of the rig (rig.env).
type rig struct {
	login          string // host:port of the login node's sshd
	loginIP        string
	node           string // the compute node's name
	user           string
	uid            string
	key            string
	knownHosts     string // pins the login node
	nodeKnownHosts string // pins the compute node
}

func loadRig() (*rig, error) {
	vars, err := rigenv.Read(rigenv.File())
	if err != nil {
		return nil, fmt.Errorf("%w (is the rig up? bash hack/rig/rig.sh up)", err)
	}
	r := &rig{
		loginIP:        vars["RIG_LOGIN_ADDR"],
		node:           vars["RIG_NODE_NAME"],
		user:           vars["RIG_USER"],
		uid:            vars["RIG_USER_UID"],
		key:            vars["RIG_KEY"],
		knownHosts:     vars["RIG_KNOWN_HOSTS"],
		nodeKnownHosts: vars["RIG_NODE_KNOWN_HOSTS"],
	}
	port := vars["RIG_LOGIN_PORT"]
	if port == "" {
		port = "22"
	}
	r.login = net.JoinHostPort(r.loginIP, port)
	for k, v := range map[string]string{"RIG_LOGIN_ADDR": r.loginIP, "RIG_NODE_NAME": r.node, "RIG_USER": r.user,
		"RIG_USER_UID": r.uid, "RIG_KEY": r.key, "RIG_KNOWN_HOSTS": r.knownHosts, "RIG_NODE_KNOWN_HOSTS": r.nodeKnownHosts} {
		if v == "" {
			return nil, fmt.Errorf("rig env: %s is empty", k)
		}
	}
	return r, nil
}

// copySelf copies the running executable into dir, readable and
// executable by the site user, who runs it as the job server.
func copySelf(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("copy executable: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return "", fmt.Errorf("copy executable: %w", err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "tunnelfwd")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", fmt.Errorf("copy executable: %w", err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", fmt.Errorf("copy executable: %w", err)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("copy executable: %w", err)
	}
	return dst, nil
}

// buildTunnel builds ./cmd/sluice-tunnel of the module holding the current
// directory into dir, static and stripped as the image builds it.
func buildTunnel(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "sluice-tunnel")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=bench", "-o", out, "./cmd/sluice-tunnel")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build sluice-tunnel (run from the repository's root): %w\n%s", err, b)
	}
	return out, nil
}

// freePort returns a TCP port free on the host's 127.0.0.1 a moment ago.
// The job server listens on it in the node's namespace, and sluice-tunnel
// on the host (it listens on the job's port number).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer runs the job server on the compute node as the site user,
// listening on the node's 127.0.0.1:port.
func startServer(r *rig, self, dir string, port int) (*proc, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("job server: %w", err)
	}
	defer pr.Close()
	p, err := startProc("job server", filepath.Join(dir, "server.log"), pw,
		"ip", "netns", "exec", nodeNetns,
		"setpriv", "--reuid="+r.uid, "--regid="+r.uid, "--init-groups",
		self, "serve", "-addr", "127.0.0.1:"+strconv.Itoa(port))
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("job server: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.HasPrefix(s, "listening ") {
			return p, nil
		}
	case <-time.After(10 * time.Second):
	}
	p.stop()
	return nil, errors.New("job server: not listening within 10s (see server.log)")
}
