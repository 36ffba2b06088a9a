package relay

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoEnv makes the test binary an echo server on the unix socket it names
// (see TestMain), so that the server can run as another user.
const echoEnv = "SLUICE_RELAY_TEST_ECHO"

// tcpEchoEnv makes the test binary a TCP echo server on the address it
// names, which answers each connection with that address on a line first.
const tcpEchoEnv = "SLUICE_RELAY_TEST_TCP_ECHO"

func TestMain(m *testing.M) {
	if path := os.Getenv(echoEnv); path != "" {
		if err := serveEcho("unix", path); err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if addr := os.Getenv(tcpEchoEnv); addr != "" {
		if err := serveEcho("tcp", addr); err != nil {
			fmt.Fprintln(os.Stderr, "tcp echo:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// serveEcho listens on the unix socket or TCP address addr, says "ready"
// on standard output, echoes every connection (half-closing after EOF; on
// TCP after a first line naming addr) and returns when standard input is
// closed.
func serveEcho(network, addr string) error {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if network == "unix" {
		if err := os.Chmod(addr, 0o600); err != nil {
			return err
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if network == "tcp" {
					io.WriteString(c, addr+"\n")
				}
				io.Copy(c, c)
				c.(interface{ CloseWrite() error }).CloseWrite()
			}()
		}
	}()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// bins holds the relay binary and a copy of the test binary, in a directory
// every user can read, so that they can run as the rig's users.
var bins struct {
	once  sync.Once
	dir   string
	relay string
	test  string
	err   error
}

func binaries(t *testing.T) (relay, test string) {
	t.Helper()
	bins.once.Do(func() {
		bins.dir, bins.err = os.MkdirTemp("", "sluice-relay-test-")
		if bins.err != nil {
			return
		}
		if bins.err = os.Chmod(bins.dir, 0o755); bins.err != nil {
			return
		}
		bins.relay = filepath.Join(bins.dir, "sluice-relay")
		cmd := exec.Command("go", "build", "-o", bins.relay, "github.com/sluice-hpc/sluice/cmd/sluice-relay")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		bins.test = filepath.Join(bins.dir, "relay.test")
		bins.err = copyFile(os.Args[0], bins.test, 0o755)
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.relay, bins.test
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// asUser makes cmd run as a, with no supplementary groups.
func asUser(cmd *exec.Cmd, a account) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}}
}

// sockDir makes a socket directory owned by a, mode 0700, in a directory
// everyone can traverse; it returns the directory and the parent.
func sockDir(t *testing.T, a account) (dir, parent string) {
	t.Helper()
	parent, err := os.MkdirTemp("", "sluice-relay-dir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(parent, "pod")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(a.uid), int(a.gid)); err != nil {
		t.Fatal(err)
	}
	return dir, parent
}

// startEcho runs an echo server as a on the unix socket path.
func startEcho(t *testing.T, a account, path string) {
	t.Helper()
	startEchoEnv(t, a, echoEnv+"="+path)
}

// startTCPEcho runs a TCP echo server as a on addr; stop ends it.
func startTCPEcho(t *testing.T, a account, addr netip.AddrPort) (stop func()) {
	t.Helper()
	return startEchoEnv(t, a, tcpEchoEnv+"="+addr.String())
}

func startEchoEnv(t *testing.T, a account, env string) (stop func()) {
	t.Helper()
	_, test := binaries(t)
	cmd := exec.Command(test)
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	asUser(cmd, a)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stdin.Close()
			cmd.Wait()
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("echo server as %s: got %q, %v; want ready", a.name, line, err)
	}
	return stop
}

// relayProc is a running sluice-relay.
type relayProc struct {
	cmd    *exec.Cmd
	stderr string // file holding its standard error
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// startRelay runs sluice-relay as a with args; its standard error goes to a
// file in logDir.
func startRelay(t *testing.T, a account, logDir string, args ...string) *relayProc {
	t.Helper()
	relay, _ := binaries(t)
	p := &relayProc{stderr: filepath.Join(logDir, "relay.stderr"), done: make(chan struct{})}
	f, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(relay, args...)
	p.cmd.Stderr = f
	asUser(p.cmd, a)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		if t.Failed() {
			t.Logf("relay stderr:\n%s", p.log(t))
		}
	})
	return p
}

// exitCode waits up to timeout for the relay to exit and returns its status.
func (p *relayProc) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("relay still running after %v", timeout)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("relay: %v", p.err)
	return -1
}

func (p *relayProc) log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitReady polls for the readiness file, failing if the relay exits first.
func (p *relayProc) waitReady(t *testing.T, dir string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, ReadyFile)); err == nil {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("relay exited before it was ready: %v\n%s", p.err, p.log(t))
		case <-deadline:
			t.Fatalf("no %s after 10s\n%s", ReadyFile, p.log(t))
		case <-tick.C:
		}
	}
}

// countLines counts the lines of s containing sub.
func countLines(s, sub string) int {
	n := 0
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}
