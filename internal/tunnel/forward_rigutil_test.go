//go:build rig

package tunnel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
)

const nodeNetns = "sluice-node"

// loginDialer dials the login node, counting the dials and keeping the
// connections so that a test can cut them.
type loginDialer struct {
	n     atomic.Int32
	fail  atomic.Int32 // dials still to fail
	mu    sync.Mutex
	conns []net.Conn
	times []time.Time // of every dial
}

func (d *loginDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	d.mu.Lock()
	d.times = append(d.times, time.Now())
	d.mu.Unlock()
	if d.fail.Add(-1) >= 0 {
		return nil, errors.New("login node unreachable (test)")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// gaps returns the time between each dial and the one before it.
func (d *loginDialer) gaps() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(d.times); i++ {
		out = append(out, d.times[i].Sub(d.times[i-1]))
	}
	return out
}

// cut closes every connection made so far, as a broken link would.
func (d *loginDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

func rigHop(t *testing.T, r *testrig.Rig, nodeKnownHosts string, d *loginDialer) *Hop {
	t.Helper()
	signer, err := sshx.Signer(r.Get(t, "RIG_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	login, err := sshx.HostKeys(r.Get(t, "RIG_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := sshx.HostKeys(nodeKnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	return &Hop{
		LoginAddr:     net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")),
		User:          r.Get(t, "RIG_USER"),
		Auth:          []ssh.AuthMethod{ssh.PublicKeys(signer)},
		LoginHostKeys: login,
		NodeHostKeys:  node,
		Dial:          d.dial,
		Timeout:       10 * time.Second,
	}
}

// nodeListening reports whether something listens on port in the node's
// network namespace.
func nodeListening(t *testing.T, port int) bool {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltn", "sport = :"+strconv.Itoa(port)).Output()
	if err != nil {
		t.Fatalf("ss in %s: %v", nodeNetns, err)
	}
	return strings.TrimSpace(string(out)) != ""
}

// freeNodePort returns a port nothing listens on in the node's namespace.
func freeNodePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		if p := 20000 + rand.N(20000); !nodeListening(t, p) {
			return p
		}
	}
	t.Fatal("no free port on the node")
	return 0
}

func TestMain(m *testing.M) {
	code := m.Run()
	if echoDir != "" {
		os.RemoveAll(echoDir)
	}
	os.Exit(code)
}

var (
	echoOnce sync.Once
	echoDir  string // holds the echo server binary, built once
	echoErr  error
)

// echoServer builds testdata/echoserver where the job user can run it.
func echoServer(t *testing.T) string {
	t.Helper()
	echoOnce.Do(func() {
		if echoDir, echoErr = os.MkdirTemp("", "sluice-echo"); echoErr != nil {
			return
		}
		if echoErr = os.Chmod(echoDir, 0o755); echoErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(echoDir, "echoserver"), "./testdata/echoserver")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			echoErr = fmt.Errorf("build the echo server: %v\n%s", err, out)
		}
	})
	if echoErr != nil {
		t.Fatal(echoErr)
	}
	return filepath.Join(echoDir, "echoserver")
}

// startEcho starts a TCP echo server as the job user in the node's network
// namespace, bound on bind, and returns its port. It is killed when the
// test ends.
func startEcho(t *testing.T, r *testrig.Rig, bind string) int {
	t.Helper()
	return startNodeServer(t, r, bind)
}

// startNodeServer starts testdata/echoserver with flags as the job user in
// the node's network namespace, bound on bind, and returns its port. It is
// killed when the test ends.
func startNodeServer(t *testing.T, r *testrig.Rig, bind string, flags ...string) int {
	t.Helper()
	port := freeNodePort(t)
	startNodeServerAs(t, r.Get(t, "RIG_USER"), net.JoinHostPort(bind, strconv.Itoa(port)), flags...)
	return port
}

// startNodeServerAs starts testdata/echoserver with flags as user in the
// node's network namespace, on addr. It is killed when the test ends.
func startNodeServerAs(t *testing.T, user, addr string, flags ...string) {
	t.Helper()
	exited := startAsOnNode(t, user, echoServer(t), append(flags, addr)...)
	_, port, _ := net.SplitHostPort(addr)
	waitFor(t, 5*time.Second, "echo server listening", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("echo server on %s exited: %v", addr, err)
		default:
		}
		n, _ := strconv.Atoi(port)
		return nodeListening(t, n)
	})
}

// startAsOnNode starts bin with args as user in the node's network
// namespace; the channel gives its end. It is killed when the test ends.
func startAsOnNode(t *testing.T, user, bin string, args ...string) <-chan error {
	t.Helper()
	argv := append([]string{"netns", "exec", nodeNetns, "setpriv", "--reuid", user, "--regid", user, "--init-groups", bin}, args...)
	cmd := exec.Command("ip", argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	return exited
}

// echo sends payload to addr, half-closes, and checks the same bytes come
// back followed by EOF.
func echo(t *testing.T, addr string, payload []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		sent <- err
	}()
	got, err := io.ReadAll(c)
	if err := <-sent; err != nil {
		t.Fatalf("send: %v", err)
	}
	if err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("echo gave %d bytes (%.20q); want the %d sent (%.20q)", len(got), got, len(payload), payload)
	}
}

func nodeFile(t *testing.T, node string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "node")
	writeNode(t, file, node)
	return file
}
