package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
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

	"golang.org/x/sys/unix"
)

// relaySetup is a relay started as alice on a fresh address, with an
// echo server of alice's behind its first port unless noEcho.
type relaySetup struct {
	users  rigUsers
	addr   netip.Addr
	ports  []uint16
	dir    string
	parent string
	proc   *relayProc
}

func (s *relaySetup) server(i int) netip.AddrPort { return netip.AddrPortFrom(s.addr, s.ports[i]) }

func startSetup(t *testing.T, nports int, echo bool, extra ...string) *relaySetup {
	t.Helper()
	s := &relaySetup{users: loadUsers(t), addr: testAddr()}
	s.ports = freePorts(t, s.addr, nports)
	s.dir, s.parent = sockDir(t, s.users.alice)
	if echo {
		startEcho(t, s.users.alice, filepath.Join(s.dir, SocketName(s.ports[0])))
	}
	s.proc = startRelay(t, s.users.alice, s.parent, s.args(extra...)...)
	s.proc.waitReady(t, s.dir)
	return s
}

func (s *relaySetup) args(extra ...string) []string {
	var ports []string
	for _, p := range s.ports {
		ports = append(ports, strconv.Itoa(int(p)))
	}
	args := []string{"--addr", s.addr.String(), "--dir", s.dir, "--ports", strings.Join(ports, ",")}
	return append(args, extra...)
}

// echoThrough sends a line through the relay as uid and returns the answer.
func echoThrough(uid uint32, server netip.AddrPort, mapped bool, msg string) (string, error) {
	c, err := dialAs(uid, server, mapped)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return exchange(c, msg)
}

// exchange sends msg on c, half-closes it and reads the answer to its end.
func exchange(c halfCloser, msg string) (string, error) {
	if _, err := io.WriteString(c, msg); err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	if err := c.CloseWrite(); err != nil {
		return "", fmt.Errorf("close write: %w", err)
	}
	got, err := io.ReadAll(c)
	return string(got), err
}

func TestRelayPassesOnlyTheJobUser(t *testing.T) {
	s := startSetup(t, 2, true)
	ready, err := os.ReadFile(filepath.Join(s.dir, ReadyFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := s.server(0).String() + "\n" + s.server(1).String() + "\n"; string(ready) != want {
		t.Errorf("%s: got %q; want %q", ReadyFile, ready, want)
	}
	for _, mapped := range []bool{false, true} {
		msg := fmt.Sprintf("hello mapped=%v\n", mapped)
		got, err := echoThrough(s.users.alice.uid, s.server(0), mapped, msg)
		if err != nil || got != msg {
			t.Errorf("%s (mapped=%v): got %q, %v; want %q", s.users.alice.name, mapped, got, err, msg)
		}
		got, err = echoThrough(s.users.bob.uid, s.server(0), mapped, msg)
		if got != "" {
			t.Errorf("%s (mapped=%v): got %q (err %v); want no data", s.users.bob.name, mapped, got, err)
		}
	}
	// A large transfer, to exercise both copy directions at length.
	big := strings.Repeat("0123456789abcdef", 1<<16)
	if got, err := echoThrough(s.users.alice.uid, s.server(0), false, big); err != nil || got != big {
		t.Errorf("1 MiB echo: got %d bytes, %v; want %d", len(got), err, len(big))
	}
	log := s.proc.log(t)
	if n := countLines(log, failureMessages[ownerRefused]); n != 1 {
		t.Errorf("owner refusals logged: got %d; want 1 (the first of 2)\n%s", n, log)
	}
	if !strings.Contains(log, "uid="+strconv.Itoa(int(s.users.bob.uid))) {
		t.Errorf("refusal does not name uid %d:\n%s", s.users.bob.uid, log)
	}
}

func TestRelayTunnelDown(t *testing.T) {
	s := startSetup(t, 1, false)
	alice := s.users.alice.uid
	// No socket: closed without data.
	if got, err := echoThrough(alice, s.server(0), false, "x"); got != "" {
		t.Errorf("without a socket: got %q, %v; want no data", got, err)
	}
	// A socket whose listener is not the job's user (root here): closed too.
	sock := filepath.Join(s.dir, SocketName(s.ports[0]))
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "root's listener\n")
			c.Close()
		}
	}()
	if got, err := echoThrough(alice, s.server(0), false, "x"); got != "" {
		t.Errorf("with root's listener: got %q, %v; want no data", got, err)
	}
	ln.Close()
	os.Remove(sock)
	// The tunnel comes back: the same listener serves again.
	startEcho(t, s.users.alice, sock)
	if got, err := echoThrough(alice, s.server(0), false, "back\n"); got != "back\n" {
		t.Errorf("tunnel back: got %q, %v; want %q", got, err, "back\n")
	}
	log := s.proc.log(t)
	if n := countLines(log, failureMessages[tunnelDown]); n != 1 {
		t.Errorf("tunnel-down lines: got %d; want 1 (the first of 2)\n%s", n, log)
	}
	if !strings.Contains(log, "no such file") {
		t.Errorf("tunnel-down line does not say the socket is missing:\n%s", log)
	}
}

func TestRelayPortTaken(t *testing.T) {
	users := loadUsers(t)
	addr := testAddr()
	ports := freePorts(t, addr, 2)
	dir, parent := sockDir(t, users.alice)
	taken, err := net.Listen("tcp4", netip.AddrPortFrom(addr, ports[1]).String())
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	p := startRelay(t, users.alice, parent, "--addr", addr.String(), "--dir", dir,
		"--port", strconv.Itoa(int(ports[0])), "--port", strconv.Itoa(int(ports[1])))
	if code := p.exitCode(t, 10*time.Second); code != 3 {
		t.Errorf("exit status: got %d; want 3", code)
	}
	want := fmt.Sprintf("sluice-relay: port %d on %v is taken: ", ports[1], addr)
	if log := p.log(t); !strings.HasPrefix(log, want) {
		t.Errorf("stderr: got %q; want it to start with %q", log, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ReadyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after a failed start: got %v; want it absent", ReadyFile, err)
	}
	// The first port, bound before, was let go.
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(addr, ports[0]).String())
	if err != nil {
		t.Errorf("port %d still held after the failed start: %v", ports[0], err)
	} else {
		ln.Close()
	}
}

func TestRelayUsage(t *testing.T) {
	users := loadUsers(t)
	dir, parent := sockDir(t, users.alice)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--dir", dir, "--port", "9000"}, 2, "--addr is required"},
		{[]string{"--addr", "127.0.0.1", "--dir", dir, "--port", "9000"}, 2, "--addr: 127.0.0.1"},
		{[]string{"--addr", "127.9.9.9", "--dir", dir}, 2, "--ports: none given"},
		{[]string{"--addr", "127.9.9.9", "--dir", dir, "--port", "9000", "--port-file", "/x/ports"}, 2, "--port-file"},
		{[]string{"--addr", "127.9.9.9", "--dir", dir, "--forward", "--port-file", "ports"}, 2, "--port-file"},
		{[]string{"--addr", "127.9.9.9", "--dir", dir, "--ports", "9000,x"}, 2, `port "x"`},
		{[]string{"--addr", "127.9.9.9", "--dir", dir, "--port", "9000", "--uid", "bob"}, 2, `--uid "bob"`},
		{[]string{"--addr", "127.9.9.9", "--dir", dir + "/none", "--port", "9000"}, 1, "socket directory"},
		{[]string{"--addr", "127.9.9.9", "--dir", dir, "--port", "9000", "--uid", "0"}, 1, "not the job's uid 0"},
	}
	for _, tc := range cases {
		p := startRelay(t, users.alice, parent, tc.args...)
		code := p.exitCode(t, 10*time.Second)
		if log := p.log(t); code != tc.code || !strings.Contains(log, tc.msg) {
			t.Errorf("%q: got status %d, %q; want %d, %q", tc.args, code, log, tc.code, tc.msg)
		}
	}
}

func TestRelayStops(t *testing.T) {
	t.Run("parent gone", func(t *testing.T) {
		sleep := exec.Command("sleep", "600")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		s := startSetup(t, 1, false, "--parent-pid", strconv.Itoa(sleep.Process.Pid))
		sleep.Process.Kill() // not reaped yet: a zombie is gone too
		defer sleep.Wait()
		checkStopped(t, s, "parent process is gone")
	})
	t.Run("SIGTERM", func(t *testing.T) {
		s := startSetup(t, 1, false)
		s.proc.cmd.Process.Signal(syscall.SIGTERM)
		checkStopped(t, s, `reason="terminated signal received"`)
		if _, err := os.Stat(filepath.Join(s.dir, ReadyFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after SIGTERM: got %v; want it removed", ReadyFile, err)
		}
	})
}

// TestRelayKeepsPortsWithoutDir takes the socket directory away from a
// running relay in each way it can go: removed, renamed away (as the owner
// of a shared root could do, to bind the relay's address itself and receive
// the job's connections), replaced by a new one. The relay must keep its
// port, refuse every connection (logged once), and let the port go only
// when the job's shell is gone.
func TestRelayKeepsPortsWithoutDir(t *testing.T) {
	ways := []struct {
		name string
		take func(t *testing.T, s *relaySetup)
	}{
		{"removed", func(t *testing.T, s *relaySetup) {
			if err := os.RemoveAll(s.dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed away", func(t *testing.T, s *relaySetup) {
			if err := os.Rename(s.dir, s.dir+".away"); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", func(t *testing.T, s *relaySetup) {
			if err := os.Rename(s.dir, s.dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(s.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(s.dir, int(s.users.alice.uid), int(s.users.alice.gid)); err != nil {
				t.Fatal(err)
			}
			// A new relay's readiness file, and the tunnel's socket
			// in the new directory: neither is the old relay's.
			if err := os.WriteFile(filepath.Join(s.dir, ReadyFile), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			startEcho(t, s.users.alice, filepath.Join(s.dir, SocketName(s.ports[0])))
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			shell := exec.Command("sleep", "600")
			if err := shell.Start(); err != nil {
				t.Fatal(err)
			}
			defer shell.Wait()
			defer shell.Process.Kill()
			s := startSetup(t, 1, true, "--parent-pid", strconv.Itoa(shell.Process.Pid))
			alice := s.users.alice.uid
			if got, err := echoThrough(alice, s.server(0), false, "before\n"); got != "before\n" {
				t.Fatalf("before: got %q, %v; want the echo", got, err)
			}
			w.take(t, s)
			waitLog(t, s.proc, "socket directory gone")
			for i := range 3 {
				if got, err := echoThrough(alice, s.server(0), false, "after\n"); got != "" {
					t.Errorf("connection %d after: got %q, %v; want it refused", i, got, err)
				}
			}
			if ln, err := net.Listen("tcp4", s.server(0).String()); err == nil {
				ln.Close()
				t.Fatalf("port %v free while the job runs: another user could take it", s.server(0))
			}
			select {
			case <-s.proc.done:
				t.Fatalf("relay exited while the job runs: %v", s.proc.err)
			default:
			}
			if w.name == "replaced" {
				if _, err := os.Stat(filepath.Join(s.dir, ReadyFile)); err != nil {
					t.Errorf("the old relay touched the new directory's %s: %v", ReadyFile, err)
				}
			}
			shell.Process.Kill()
			checkStopped(t, s, "parent process is gone")
			log := s.proc.log(t)
			if n := countLines(log, "socket directory gone"); n != 1 {
				t.Errorf("directory-gone lines: got %d; want 1\n%s", n, log)
			}
			if n := countLines(log, failureMessages[dirGone]); n != 1 {
				t.Errorf("refusals logged: got %d; want 1 (the first of 3)\n%s", n, log)
			}
		})
	}
}

// waitLog waits up to 10s for the relay to log a line containing sub.
func waitLog(t *testing.T, p *relayProc, sub string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.log(t), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("relay did not log %q within 10s:\n%s", sub, p.log(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func checkStopped(t *testing.T, s *relaySetup, reason string) {
	t.Helper()
	if code := s.proc.exitCode(t, 10*time.Second); code != 0 {
		t.Errorf("exit status: got %d; want 0", code)
	}
	if log := s.proc.log(t); !strings.Contains(log, reason) {
		t.Errorf("stderr does not give the reason %q:\n%s", reason, log)
	}
	ln, err := net.Listen("tcp4", s.server(0).String())
	if err != nil {
		t.Errorf("port still held after exit: %v", err)
		return
	}
	ln.Close()
}

// TestRelayRefusalFlood makes 100,000 connections as bob (half of them
// v4-mapped) and counts the relay's log lines: the refusals must not flood
// the job's output.
func TestRelayRefusalFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 connections")
	}
	s := startSetup(t, 1, true)
	const total, workers = 100_000, 8
	var next, withData atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= total; i = next.Add(1) {
				n, err := refusedAs(s.users.bob.uid, s.server(0), i%2 == 0)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if n > 0 {
					withData.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("%d refused connections in %v", total, time.Since(start))
	if n := withData.Load(); n != 0 {
		t.Errorf("%d of bob's connections received data; want 0", n)
	}
	s.proc.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.proc.exitCode(t, 10*time.Second); code != 0 {
		t.Errorf("exit status: got %d; want 0", code)
	}
	log := s.proc.log(t)
	refusals := countLines(log, failureMessages[ownerRefused])
	lines := countLines(log, "")
	t.Logf("log: %d lines, %d of them refusals", lines, refusals)
	if refusals != total/logEvery || lines > total/logEvery+5 {
		t.Errorf("got %d refusal lines of %d; want %d of at most %d\n%s", refusals, lines, total/logEvery, total/logEvery+5, log)
	}
	if !strings.Contains(log, "count=99001") {
		t.Errorf("last refusal line (count=99001) missing:\n%s", log)
	}
}

// refusedAs connects to server as uid and reads until the relay closes the
// connection, returning how many bytes came.
func refusedAs(uid uint32, server netip.AddrPort, mapped bool) (int, error) {
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: int(server.Port()), Addr: server.Addr().As4()})
	if mapped {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(server.Port()), Addr: netip.AddrFrom16(server.Addr().As16()).As16()}
	}
	fd, err := socketAs(uid, family)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if mapped {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			return 0, err
		}
	}
	tv := unix.Timeval{Sec: 10}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, err
	}
	err = unix.Connect(fd, sa)
	if errors.Is(err, unix.ECONNRESET) {
		// The relay reset the connection before connect returned.
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("connect %v: %w", server, err)
	}
	buf := make([]byte, 64)
	total := 0
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.ECONNRESET) || err == nil && n == 0:
			return total, nil
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return total, fmt.Errorf("read: %w", err)
		}
		total += n
	}
}

func TestPortErrorMessages(t *testing.T) {
	addr := netip.MustParseAddr("127.0.7.9")
	taken := &PortError{Addr: addr, Port: 6379, Err: fmt.Errorf("listen: %w", syscall.EADDRINUSE)}
	if got := taken.Error(); !strings.Contains(got, "port 6379 on 127.0.7.9 is taken") {
		t.Errorf("taken port: %q", got)
	}
	privileged := &PortError{Addr: addr, Port: 443, Err: fmt.Errorf("listen: %w", syscall.EACCES)}
	got := privileged.Error()
	for _, want := range []string{"port 443 on 127.0.7.9 is privileged", "net.ipv4.ip_unprivileged_port_start", "listenport:host:443"} {
		if !strings.Contains(got, want) {
			t.Errorf("privileged port: %q lacks %q", got, want)
		}
	}
}
