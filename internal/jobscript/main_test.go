package jobscript

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
)

// holdEnv makes the test binary hold a TCP listener on the IPv4 address it
// names (see TestMain), so that the listener can belong to another user.
const holdEnv = "SLUICE_SLURM_TEST_HOLD"

// serveEnv makes the holder answer every connection with an HTTP 200, as
// a listener of another user that would pass a probe.
const serveEnv = "SLUICE_SLURM_TEST_SERVE"

func TestMain(m *testing.M) {
	if addr := os.Getenv(holdEnv); addr != "" {
		if err := hold(addr); err != nil {
			fmt.Fprintln(os.Stderr, "hold:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if holder.dir != "" {
		os.RemoveAll(holder.dir)
	}
	os.Exit(code)
}

// hold listens on addr, prints the address it got on standard output and
// returns when standard input is closed.
func hold(addr string) error {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if os.Getenv(serveEnv) != "" {
		go answerOK(ln)
	}
	fmt.Println(ln.Addr())
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// answerOK answers each connection to ln with an HTTP 200, and closes it
// once the client has.
func answerOK(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			_, _ = io.Copy(io.Discard, c)
		}()
	}
}

// holder is a copy of the test binary in a directory every user can read, so
// that it can run as another user.
var holder struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func holderBinary(t *testing.T) string {
	t.Helper()
	holder.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			holder.err = err
			return
		}
		if holder.dir, holder.err = os.MkdirTemp("", "sluice-slurm-test-"); holder.err != nil {
			return
		}
		if holder.err = os.Chmod(holder.dir, 0o755); holder.err != nil {
			return
		}
		holder.bin = filepath.Join(holder.dir, "slurm.test")
		holder.err = copyExecutable(self, holder.bin)
	})
	if holder.err != nil {
		t.Fatalf("copy the test binary: %v", holder.err)
	}
	return holder.bin
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// holdAs starts a listener on addr (an IPv4 address and port, port 0 for
// any) in a process of user uid, and returns the address it listens on. The
// process ends with the test.
func holdAs(t *testing.T, uid uint32, addr string) netip.AddrPort {
	t.Helper()
	return startHolder(t, uid, addr, holdEnv+"="+addr)
}

// serveAs is holdAs with a listener that answers every connection with an
// HTTP 200 (answerOK).
func serveAs(t *testing.T, uid uint32, addr string) netip.AddrPort {
	t.Helper()
	return startHolder(t, uid, addr, holdEnv+"="+addr, serveEnv+"=1")
}

func startHolder(t *testing.T, uid uint32, addr string, env ...string) netip.AddrPort {
	t.Helper()
	cmd := exec.Command(holderBinary(t))
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the holder as uid %d: %v", uid, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("holder as uid %d: %v", uid, err)
	}
	ap, err := netip.ParseAddrPort(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("holder as uid %d said %q: %v", uid, line, err)
	}
	return ap
}
