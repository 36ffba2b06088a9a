package relay

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRelayRefusesOrphansOfAnotherUser runs a relay whose job's user is
// root, as a job running as uid 0 has, and floods it for two seconds with
// bob's connect-write-close connections (half of them v4-mapped). A client
// socket closed by its process is an orphan, which the kernel reports with
// uid 0 and inode 0: none may reach the tunnel. Root's own connection, made
// first, shows the tunnel works.
func TestRelayRefusesOrphansOfAnotherUser(t *testing.T) {
	users := loadUsers(t)
	root := account{name: "root"}
	s := &relaySetup{users: users, addr: testAddr()}
	s.ports = freePorts(t, s.addr, 1)
	s.dir, s.parent = sockDir(t, root)
	ln, err := net.Listen("unix", filepath.Join(s.dir, SocketName(s.ports[0])))
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	defer func() {
		ln.Close()
		wg.Wait()
	}()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				c.Write(buf[:n])
			})
		}
	})
	s.proc = startRelay(t, root, s.parent, s.args("--uid", "0")...)
	s.proc.waitReady(t, s.dir)

	c, err := dialAs(0, s.server(0), false)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("root\n"))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	c.Close()
	if string(buf[:n]) != "root\n" {
		t.Fatalf("root's own connection: got %q, %v; want its echo", buf[:n], err)
	}
	accepted.Store(0)

	var made atomic.Int64
	var firstErr error
	var once sync.Once
	stop := time.Now().Add(2 * time.Second)
	var flood sync.WaitGroup
	for w := range 8 {
		flood.Go(func() {
			for time.Now().Before(stop) {
				if err := connectWriteClose(users.bob.uid, s.server(0), w%2 == 1); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				made.Add(1)
			}
		})
	}
	flood.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	// Let the relay finish with what it accepted last.
	time.Sleep(500 * time.Millisecond)
	t.Logf("%d connect-write-close connections as %s", made.Load(), users.bob.name)
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d of %d of %s's closed connections reached the tunnel of a uid-0 job; want 0", n, made.Load(), users.bob.name)
	}
	log := s.proc.log(t)
	if countLines(log, failureMessages[notHeld])+countLines(log, failureMessages[ownerRefused])+countLines(log, failureMessages[lookupFailed]) == 0 {
		t.Errorf("no refusal logged:\n%s", log)
	}
}

// connectWriteClose connects to server from a socket owned by uid, writes a
// line and closes the socket at once, leaving an orphan in the kernel.
func connectWriteClose(uid uint32, server netip.AddrPort, mapped bool) error {
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: int(server.Port()), Addr: server.Addr().As4()})
	if mapped {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(server.Port()), Addr: netip.AddrFrom16(server.Addr().As16()).As16()}
	}
	fd, err := socketAs(uid, family)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if mapped {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			return err
		}
	}
	if err := unix.Connect(fd, sa); err != nil {
		if errors.Is(err, unix.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
		return err
	}
	_, err = unix.Write(fd, []byte("bob "+strconv.Itoa(os.Getpid())+"\n"))
	if errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE) {
		return nil
	}
	return err
}
