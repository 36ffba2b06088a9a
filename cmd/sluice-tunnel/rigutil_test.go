//go:build rig

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

const nodeNetns = "sluice-node"

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// tunnelBinary builds sluice-tunnel once per test run, static as in the
// image, and returns its path.
func tunnelBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-tunnel-test")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "sluice-tunnel")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/sluice-hpc/sluice/internal/version.version=rig-test", "-o", binary, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// tunnelProc is a running sluice-tunnel, its JSON log lines collected.
type tunnelProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	lines  []map[string]any
}

// startTunnel runs `sluice-tunnel mode args...`; it is killed when the
// test ends if it is still running.
func startTunnel(t *testing.T, mode string, args ...string) *tunnelProc {
	t.Helper()
	cmd := exec.Command(tunnelBinary(t), append([]string{mode}, args...)...)
	p := &tunnelProc{t: t, cmd: cmd, exited: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start sluice-tunnel: %v", err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("sluice-tunnel: %s", sc.Text())
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Errorf("log line %q is not JSON: %v", sc.Text(), err)
				continue
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
		}
	}()
	go func() {
		<-read
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if p.running() {
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *tunnelProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and checks that the tunnel exits with status 0.
func (p *tunnelProc) stop() {
	p.t.Helper()
	p.stopLogging("tunnel stopped")
}

// stopLogging sends SIGTERM and checks that the process exits with status
// 0, having logged last.
func (p *tunnelProc) stopLogging(last string) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.t.Fatal("sluice-tunnel did not stop within 15s of SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Errorf("exit status after SIGTERM %d; want 0", code)
	}
	if p.count(last, nil) != 1 {
		p.t.Errorf("no %q log line", last)
	}
}

// count returns how many log lines have msg and, for each key of attrs, a
// value containing the given text.
func (p *tunnelProc) count(msg string, attrs map[string]string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
next:
	for _, l := range p.lines {
		if l["msg"] != msg {
			continue
		}
		for k, v := range attrs {
			if !strings.Contains(fmt.Sprint(l[k]), v) {
				continue next
			}
		}
		n++
	}
	return n
}

// linesAt returns the log lines at level.
func (p *tunnelProc) linesAt(level string) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.lines {
		if l["level"] == level {
			out = append(out, l)
		}
	}
	return out
}

// metric returns the value of the sample of metrics whose name and labels
// match sample (a regular expression), or -1 when there is none.
func metric(t *testing.T, metricsURL, sample string) float64 {
	t.Helper()
	body, code := get(metricsURL)
	if code != 200 {
		t.Fatalf("GET %s: status %d", metricsURL, code)
	}
	re := regexp.MustCompile(`(?m)^` + sample + ` (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("sample %s: %v", m[0], err)
	}
	return v
}

// siteArgs are the flags both modes share, for the rig's site as alice.
func siteArgs(t *testing.T, r *testrig.Rig, nodeKnownHosts, nodeFile string) []string {
	return []string{
		"--login=" + net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT")),
		"--user=" + r.Get(t, "RIG_USER"),
		"--key=" + r.Get(t, "RIG_KEY"),
		"--login-known-hosts=" + r.Get(t, "RIG_KNOWN_HOSTS"),
		"--node-known-hosts=" + nodeKnownHosts,
		"--node-file=" + nodeFile,
	}
}

func writeNodeFile(t *testing.T, node string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(file, []byte(node+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
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

// portPair returns a port held on the host's 127.0.0.1 for the test (so
// it is free on 127.0.0.2, see holdPort) that nothing listens on in the
// node's namespace either.
func portPair(t *testing.T) int {
	t.Helper()
	for range 20 {
		if p := holdPort(t); !nodeListening(t, p) {
			return p
		}
	}
	t.Fatal("no port free on both the host and the node")
	return 0
}

// startNodeEcho starts a TCP echo server (socat) as the job user in the
// node's network namespace, on the node's 127.0.0.1:port.
func startNodeEcho(t *testing.T, r *testrig.Rig, port int) {
	t.Helper()
	user := r.Get(t, "RIG_USER")
	cmd := exec.Command("ip", "netns", "exec", nodeNetns,
		"setpriv", "--reuid", user, "--regid", user, "--init-groups",
		"socat", "-t", "30", "TCP-LISTEN:"+strconv.Itoa(port)+",bind=127.0.0.1,fork,reuseaddr", "EXEC:cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start echo server on the node: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	waitFor(t, 5*time.Second, "echo server on the node", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("echo server on the node exited: %v", err)
		default:
		}
		return nodeListening(t, port)
	})
}

// startLocalEcho starts a TCP echo server on the host's 127.0.0.1 (the
// cluster side) and returns its address.
func startLocalEcho(t *testing.T) string {
	t.Helper()
	return sshxtest.ServeLoopback(t, sshxtest.Echo)
}

// echo sends payload to addr, half-closes, and checks that the same bytes
// come back followed by EOF.
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
	if serr := <-sent; serr != nil {
		t.Fatalf("send: %v", serr)
	}
	if err != nil {
		t.Fatalf("read the echo: %v", err)
	}
	if string(got) != string(payload) {
		t.Fatalf("echo gave %d bytes; want the %d sent", len(got), len(payload))
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.N(256))
	}
	return b
}

// throughSocket sends payload through the unix socket sock on the node, as
// the job user, half-closing after it, and returns what came back.
func throughSocket(t *testing.T, r *testrig.Rig, sock, payload string) string {
	t.Helper()
	user := r.Get(t, "RIG_USER")
	cmd := exec.Command("ip", "netns", "exec", nodeNetns,
		"setpriv", "--reuid", user, "--regid", user, "--init-groups",
		"socat", "-t", "10", "-", "UNIX-CONNECT:"+sock)
	cmd.Stdin = strings.NewReader(payload)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("socat to %s as %s: %v", sock, user, err)
	}
	return string(out)
}
