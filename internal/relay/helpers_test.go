package relay

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// rigUsers are the two users of the rig: the job's user and another one.
type rigUsers struct {
	alice, bob account
}

type account struct {
	name     string
	uid, gid uint32
}

// loadUsers needs root (to create sockets and start processes as others)
// and the rig's users.
func loadUsers(t testing.TB) rigUsers {
	t.Helper()
	if os.Geteuid() != 0 {
		testrig.Unavailable(t, "needs root to act as the rig's users")
	}
	rig := testrig.Load(t)
	u := rigUsers{
		alice: lookupAccount(t, rig.Get(t, "RIG_USER")),
		bob:   lookupAccount(t, rig.Get(t, "RIG_OTHER_USER")),
	}
	if want := rig.Get(t, "RIG_USER_UID"); strconv.Itoa(int(u.alice.uid)) != want {
		t.Fatalf("uid of %s: got %d; want %s (RIG_USER_UID)", u.alice.name, u.alice.uid, want)
	}
	return u
}

func lookupAccount(t testing.TB, name string) account {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("look up user %s: %v", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		t.Fatalf("uid of %s: %v", name, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		t.Fatalf("gid of %s: %v", name, err)
	}
	return account{name: name, uid: uint32(uid), gid: uint32(gid)}
}

// testAddr returns a random 127.0.0.0/8 address other than 127.0.0.x, so
// that tests do not meet each other or the node's services.
func testAddr() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(16 + rand.IntN(230)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
}

// freePorts returns n ports free on addr, a test address nobody else binds.
func freePorts(t testing.TB, addr netip.Addr, n int) []uint16 {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []uint16
	for range n {
		ln, err := net.Listen("tcp4", netip.AddrPortFrom(addr, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).AddrPort().Port())
	}
	return ports
}

// dialAs connects a TCP socket owned by uid to server. The kernel records a
// socket's owner from the file system uid of the thread creating it, so the
// socket is made on a locked thread whose fsuid is uid for that moment.
// With mapped set, an IPv4 server is dialled from an AF_INET6 socket at
// its v4-mapped address, as a JVM does.
func dialAs(uid uint32, server netip.AddrPort, mapped bool) (*net.TCPConn, error) {
	family, sa := unix.AF_INET, unix.Sockaddr(nil)
	switch {
	case server.Addr().Is4() && !mapped:
		sa = &unix.SockaddrInet4{Port: int(server.Port()), Addr: server.Addr().As4()}
	default:
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(server.Port()), Addr: server.Addr().As16()}
	}
	fd, err := socketAs(uid, family)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "client")
	defer f.Close()
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			return nil, fmt.Errorf("clear IPV6_V6ONLY: %w", err)
		}
	}
	if err := unix.Connect(fd, sa); err != nil {
		return nil, fmt.Errorf("connect %v: %w", server, err)
	}
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// socketAs creates a blocking TCP socket owned by uid.
func socketAs(uid uint32, family int) (int, error) {
	runtime.LockOSThread()
	prev, err := unix.SetfsuidRetUid(int(uid))
	if err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("setfsuid %d: %w", uid, err)
	}
	fd, serr := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	unix.Setfsuid(prev)
	if now, _ := unix.SetfsuidRetUid(-1); now != prev {
		// Leave the thread locked: it dies with the goroutine instead of
		// running others with the wrong fsuid.
		return -1, fmt.Errorf("restore fsuid: got %d; want %d", now, prev)
	}
	runtime.UnlockOSThread()
	if serr != nil {
		return -1, fmt.Errorf("socket: %w", serr)
	}
	return fd, nil
}

func addrPorts(c net.Conn) (local, remote netip.AddrPort) {
	return c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
}
