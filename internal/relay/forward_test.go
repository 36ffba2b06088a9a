package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forwardSetup is a relay started as alice with its forward entry, on a
// fresh address, without reverse ports.
type forwardSetup struct {
	users rigUsers
	addr  netip.Addr
	dir   string
	proc  *relayProc
}

func startForward(t *testing.T, users rigUsers, extra ...string) *forwardSetup {
	t.Helper()
	s := &forwardSetup{users: users, addr: testAddr()}
	var parent string
	s.dir, parent = sockDir(t, users.alice)
	args := append([]string{"--addr", s.addr.String(), "--dir", s.dir, "--forward"}, extra...)
	s.proc = startRelay(t, users.alice, parent, args...)
	s.proc.waitReady(t, s.dir)
	return s
}

// through asks the forward entry for port as alice, sends msg and returns
// the answer; a refusal is a *RefusedError.
func (s *forwardSetup) through(port uint16, msg string) (string, error) {
	c, err := dialUnixAs(s.users.alice.uid, filepath.Join(s.dir, ForwardSocket))
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if err := OpenForward(c, port); err != nil {
		return "", err
	}
	return exchange(c, msg)
}

// dialUnixAs connects to the unix socket path with uid as the effective
// user of the connecting thread, which the listener sees as its peer
// (SO_PEERCRED): a tunnel of the job's user, as sshd's session is.
func dialUnixAs(uid uint32, path string) (*net.UnixConn, error) {
	runtime.LockOSThread()
	// setresuid(2) of this thread alone: Go's syscall.Setresuid sets every thread.
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("setresuid: %w", e)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			unix.Close(fd)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
		// Leave the thread locked: it dies with the goroutine.
		return nil, fmt.Errorf("restore euid: %w", e)
	}
	runtime.UnlockOSThread()
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// listenAs makes a TCP listener owned by a on addr, in this process: a
// listener that must receive nothing, so nothing accepts on it.
func listenAs(t *testing.T, a account, addr netip.AddrPort) *net.TCPListener {
	t.Helper()
	fd, err := socketAs(a.uid, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); err != nil {
		t.Fatalf("bind %v as %s: %v", addr, a.name, err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.(*net.TCPListener)
}

// checkNothingQueued fails if a connection waits on ln.
func checkNothingQueued(t *testing.T, ln *net.TCPListener, who string) {
	t.Helper()
	ln.SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Errorf("%s's listener %v received a connection", who, ln.Addr())
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("accept on %s's listener: %v", who, err)
	}
}

// wantRefused checks that err is a refusal saying reason, to be reported
// to the pod's author (another user's listener, a bad port file) or not.
func wantRefused(t *testing.T, what string, got string, err error, reason string, report bool) {
	t.Helper()
	var rf *RefusedError
	if !errors.As(err, &rf) || !strings.Contains(rf.Reason, reason) || rf.Report != report {
		t.Errorf("%s: got %q, %v (%+v); want a refusal saying %q, reported %v", what, got, err, rf, reason, report)
	}
}

// TestForwardOwnerChecked is the shared node: bob listens on 127.0.0.1 on
// the pod's port before the job does. The relay refuses, naming bob's
// listener, until the job listens on its own address, which it then reaches;
// bob receives nothing throughout.
func TestForwardOwnerChecked(t *testing.T) {
	users := loadUsers(t)
	s := startForward(t, users)
	bobs := listenAs(t, users.bob, netip.AddrPortFrom(localhost4, 0))
	port := bobs.Addr().(*net.TCPAddr).AddrPort().Port()
	ownedByBob := fmt.Sprintf("port %d: listener 127.0.0.1:%d owned by uid %d, not the job's uid %d", port, port, users.bob.uid, users.alice.uid)

	got, err := s.through(port, "to bob?\n")
	wantRefused(t, "bob's listener only", got, err, ownedByBob, true)

	jobAddr := netip.AddrPortFrom(s.addr, port)
	stop := startTCPEcho(t, users.alice, jobAddr)
	for _, msg := range []string{"hello\n", strings.Repeat("0123456789abcdef", 1<<16)} {
		got, err = s.through(port, msg)
		if want := jobAddr.String() + "\n" + msg; err != nil || got != want {
			t.Errorf("job listening on %v: got %.60q (%d bytes), %v; want %.60q (%d bytes)", jobAddr, got, len(got), err, want, len(want))
		}
	}
	stop()
	got, err = s.through(port, "to bob?\n")
	wantRefused(t, "the job's listener gone", got, err, ownedByBob, true)
	got, err = s.through(port+1, "x")
	wantRefused(t, "another port", got, err, fmt.Sprintf("port %d: nothing listens on %v, 127.0.0.1 or [::1]", port+1, s.addr), false)
	checkNothingQueued(t, bobs, users.bob.name)

	log := s.proc.log(t)
	if n := countLines(log, failureMessages[forwardOwner]); n != 1 {
		t.Errorf("owner refusals logged: got %d; want 1 (the first of 2)\n%s", n, log)
	}
	if !strings.Contains(log, "owned by uid "+strconv.Itoa(int(users.bob.uid))) {
		t.Errorf("the log does not name bob's uid %d:\n%s", users.bob.uid, log)
	}
}

// TestForwardTwoPods runs the relays of two pods on one node, whose jobs
// both listen on the same port, each on its own address.
func TestForwardTwoPods(t *testing.T) {
	users := loadUsers(t)
	a, b := startForward(t, users), startForward(t, users)
	port := freePorts(t, a.addr, 1)[0]
	for _, s := range []*forwardSetup{a, b} {
		startTCPEcho(t, users.alice, netip.AddrPortFrom(s.addr, port))
	}
	for _, s := range []*forwardSetup{a, b} {
		got, err := s.through(port, "hi\n")
		if want := netip.AddrPortFrom(s.addr, port).String() + "\nhi\n"; err != nil || got != want {
			t.Errorf("pod on %v: got %q, %v; want %q", s.addr, got, err, want)
		}
	}
}

// TestForwardPortFile has the job pick its port and report it.
func TestForwardPortFile(t *testing.T) {
	users := loadUsers(t)
	jobDir, _ := sockDir(t, users.alice)
	portFile := filepath.Join(jobDir, "ports")
	s := startForward(t, users, "--port-file", portFile)
	ports := freePorts(t, s.addr, 2)
	declared, actual := ports[0], ports[1]
	startTCPEcho(t, users.alice, netip.AddrPortFrom(s.addr, actual))

	got, err := s.through(declared, "x")
	wantRefused(t, "no port file", got, err, fmt.Sprintf("port %d: nothing listens", declared), false)
	writeAs := func(content string) {
		t.Helper()
		if err := os.WriteFile(portFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(portFile, int(users.alice.uid), int(users.alice.gid)); err != nil {
			t.Fatal(err)
		}
	}
	writeAs(fmt.Sprintf("# picked at run time\n%d=%d\n", declared, actual))
	got, err = s.through(declared, "moved\n")
	if want := netip.AddrPortFrom(s.addr, actual).String() + "\nmoved\n"; err != nil || got != want {
		t.Errorf("declared %d, actual %d: got %q, %v; want %q", declared, actual, got, err, want)
	}
	writeAs(fmt.Sprintf("%d\n", actual))
	got, err = s.through(declared, "x")
	wantRefused(t, "malformed port file", got, err, fmt.Sprintf("port %d: port file: line 1:", declared), true)
	if err := os.Chown(portFile, int(users.bob.uid), int(users.bob.gid)); err != nil {
		t.Fatal(err)
	}
	got, err = s.through(declared, "x")
	wantRefused(t, "bob's port file", got, err, fmt.Sprintf("owned by uid %d", users.bob.uid), true)
}

// TestForwardBadHeader speaks something else to the forward entry.
func TestForwardBadHeader(t *testing.T) {
	s := startForward(t, loadUsers(t))
	c, err := dialUnixAs(s.users.alice.uid, filepath.Join(s.dir, ForwardSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if want := "refused: forward header: magic \"GET \", want \"SLFW\"\n"; err != nil || string(got) != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// TestForwardChecksAcceptedSocket has the listener change hands between the
// relay's check and its connect: a lookup that says alice's listener, while
// bob's process holds the address. The relay sees that bob accepted and
// passes on nothing.
func TestForwardChecksAcceptedSocket(t *testing.T) {
	users := loadUsers(t)
	addr := testAddr()
	bobs := netip.AddrPortFrom(addr, freePorts(t, addr, 1)[0])
	startTCPEcho(t, users.bob, bobs)
	dir, _ := sockDir(t, users.alice)
	stale := fakeListeners{bobs: {Addr: bobs, UID: users.alice.uid}}
	r, err := Listen(Config{Addr: addr, Dir: dir, UID: users.alice.uid, Forward: true, Owners: SockDiag{}, Listeners: stale, Log: slogT(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The relay runs as root here, not as the job's user.
	if err := os.Chown(filepath.Join(dir, ForwardSocket), int(users.alice.uid), int(users.alice.gid)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	s := &forwardSetup{users: users, addr: addr, dir: dir}
	got, err := s.through(bobs.Port(), "to bob?\n")
	wantRefused(t, "bob accepted", got, err, fmt.Sprintf("connection to %v accepted by uid %d, not the job's uid %d", bobs, users.bob.uid, users.alice.uid), true)
}

// slogT logs to t.
func slogT(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(tWriter{t}, nil)) }

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
